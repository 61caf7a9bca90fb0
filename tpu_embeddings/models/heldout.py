"""Held-out skip-gram loss: pairs from an eval split and a table's loss on them.

The validator scores a candidate with it, and the trainer logs it at every
checkpoint (TensorBoard `eval/loss`), on the same sample when the settings
agree: the first `max_sequences` sequences of the Examples' `eval` split,
pairs and negatives drawn once from `seed` by the trainer's own definitions
(`tpu_embeddings.models.skipgram`).
"""

import dataclasses
import itertools
import math
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.models import skipgram
from tpu_embeddings.models.skipgram_config import SkipGramConfig

EVAL_SPLIT = 'eval'
_PAIRS_PER_CALL = 8192


@dataclasses.dataclass
class EvalPairs:
  """(target, context) ids of held-out windows and one shared negative draw."""
  targets: np.ndarray    # [P] int32
  contexts: np.ndarray   # [P] int32
  negatives: np.ndarray  # [P, K] int32
  sequences: int         # sequences read
  oov_tokens: int        # tokens dropped as out-of-vocabulary


def negative_probabilities(counts: Sequence[int]) -> np.ndarray:
  """The trainer's negative distribution: unigram^0.75 over vocabulary rows."""
  p = np.power(np.maximum(np.asarray(counts, dtype=np.float64), 0.0),
               skipgram.NEGATIVE_SAMPLING_POWER)
  if not p.sum() > 0:
    raise ValueError('vocabulary counts are all zero; negatives cannot be '
                     'sampled')
  return p / p.sum()


def eval_pairs(sequences: Iterable[Sequence[str]], tokens: Sequence[str],
               counts: Sequence[int], window: int, num_negatives: int,
               subsample: float, seed: int = 0) -> EvalPairs:
  """Held-out pairs and negatives by the trainer's own definition.

  `tpu_embeddings.models.skipgram.skipgram_pairs` makes the pairs (OOV and
  subsampled tokens dropped before windows, word2vec reduced window);
  negatives follow the trainer's unigram^0.75 distribution. Everything is
  drawn once from `seed`, so every model is scored on the same pairs and
  negatives.
  """
  skipgram.SkipGramConfig(window=window, negatives=num_negatives,
                          subsample=subsample).validate()
  sequences = [list(s) for s in sequences]
  empty = np.zeros([0], np.int32)
  if not sequences:
    return EvalPairs(empty, empty, np.zeros([0, num_negatives], np.int32), 0, 0)
  ids = skipgram.id_lookup_table(tokens).lookup(
      tf.ragged.constant(sequences, dtype=tf.string, ragged_rank=1))
  oov = int(tf.reduce_sum(tf.cast(ids.flat_values < 0, tf.int32)))
  keep = tf.constant(skipgram.keep_probabilities(counts, subsample))
  targets, contexts = skipgram.skipgram_pairs(ids, keep, window,
                                              tf.constant([seed, 0], tf.int64))
  rng = np.random.default_rng(seed)
  negatives = rng.choice(len(tokens), size=(int(targets.shape[0]),
                                            num_negatives),
                         p=negative_probabilities(counts)).astype(np.int32)
  return EvalPairs(targets.numpy(), contexts.numpy(), negatives,
                   len(sequences), oov)


def skipgram_loss(table: np.ndarray, targets: np.ndarray, contexts: np.ndarray,
                  negatives: np.ndarray,
                  output_table: Optional[np.ndarray] = None) -> Optional[float]:
  """Mean negative-sampling loss per pair, by the trainer's loss function.

  Targets are rows of `table`; contexts and negatives rows of `output_table`
  (word2vec's second table), or of `table` too when it is None (tied
  vectors). None when there are no pairs or the loss is not finite.
  """
  if targets.size == 0:
    return None
  t = tf.constant(table, tf.float32)
  o = t if output_table is None else tf.constant(output_table, tf.float32)
  total = 0.0
  step = _PAIRS_PER_CALL
  for s in range(0, targets.size, step):
    loss, _ = skipgram.loss_and_gradients(
        tf.gather(t, targets[s:s + step]), tf.gather(o, contexts[s:s + step]),
        tf.gather(o, negatives[s:s + step]), global_batch_size=1)
    total += float(loss)
  loss = total / targets.size
  return loss if math.isfinite(loss) else None


def read_pairs(examples_uris: Sequence[str], tokens: Sequence[str],
               counts: Sequence[int], config: SkipGramConfig,
               max_sequences: int, seed: int) -> EvalPairs:
  """`eval_pairs` of the first `max_sequences` eval sequences of the Examples.

  Raises FileNotFoundError when an Examples artifact has no eval split.
  """
  for uri in examples_uris:
    examples_io.split_files(uri, EVAL_SPLIT)
  sequences = itertools.chain.from_iterable(
      examples_io.read_sequences(uri, EVAL_SPLIT) for uri in examples_uris)
  return eval_pairs(itertools.islice(sequences, max_sequences), tokens, counts,
                    config.window, config.negatives, config.subsample,
                    seed=seed)


def loss_of_rows(rows_of: Callable[[np.ndarray], np.ndarray],
                 pairs: EvalPairs,
                 output_rows_of: Optional[Callable[[np.ndarray], np.ndarray]]
                 = None) -> Optional[float]:
  """`skipgram_loss` reading only the rows the pairs use.

  `rows_of(ids)` returns table rows `ids` (sorted, unique), e.g. a gather
  from the live training variable, so a 10M-row table is never copied;
  `output_rows_of` the same of the output table (None: tied vectors).
  """
  if pairs.targets.size == 0:
    return None
  outputs = np.concatenate([pairs.contexts, pairs.negatives.ravel()])
  if output_rows_of is None:
    ids = np.unique(np.concatenate([pairs.targets, outputs]))
    output_ids, output_rows = ids, None
  else:
    ids, output_ids = np.unique(pairs.targets), np.unique(outputs)
    output_rows = np.asarray(output_rows_of(output_ids))
  rows = np.asarray(rows_of(ids))
  def local(known, x):
    return np.searchsorted(known, x).astype(np.int32)
  return skipgram_loss(rows, local(ids, pairs.targets),
                       local(output_ids, pairs.contexts),
                       local(output_ids, pairs.negatives), output_rows)
