"""Held-out skip-gram loss: pairs from an eval split and a table's loss on them.

The validator scores a candidate with it, and the trainer logs it at every
checkpoint (TensorBoard `eval/loss`), on the same sample when the settings
agree: the first `skipgram_config.EVAL_SEQUENCES` (the validator's
`max_eval_examples`) sequences of the Examples' `eval` split, pairs drawn by
the trainer's own definitions (`tpu_embeddings.models.skipgram`), at most
`MAX_PAIRS` of them kept (a uniform draw), and negatives, all drawn once
from `seed`.
"""

import dataclasses
import math
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import compact_vocabulary
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.core.splits import EVAL_SPLIT
from tpu_embeddings.models import skipgram
from tpu_embeddings.models import skipgram_negatives
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.models.skipgram_loss import loss as batch_loss

# The optional module hook that gives the trainer a held-out sample of
# (target, context, negatives) pairs to score in TensorBoard.
HELDOUT_PAIRS = 'heldout_pairs'

# Pairs scored at most: beyond this a seeded uniform sample of the pairs. The
# loss's standard error on it is about 0.003 nats; both models of a
# comparison are scored on the same pairs.
MAX_PAIRS = 100_000
_PAIRS_PER_CALL = 8192


@dataclasses.dataclass
class EvalPairs:
  """(target, context) ids of held-out windows and one shared negative draw."""
  targets: np.ndarray    # [P] int32
  contexts: np.ndarray   # [P] int32
  negatives: np.ndarray  # [P, K] int32
  sequences: int         # sequences read
  oov_tokens: int        # tokens dropped as out-of-vocabulary


def _pairs_of_tokens(tokens: tf.RaggedTensor, vocabulary: Sequence[str],
                     counts: Sequence[int], window: int, num_negatives: int,
                     subsample: float, seed: int, max_pairs: int,
                     data: Optional[skipgram.SkipGramData] = None
                     ) -> EvalPairs:
  """`eval_pairs` of a ragged [sequences, tokens] string tensor; `data`, a
  SkipGramData of the same vocabulary and subsample, lends its id table and
  keep probabilities instead of building them again."""
  sequences = int(tokens.nrows())
  if not sequences:
    empty = np.zeros([0], np.int32)
    return EvalPairs(empty, empty, np.zeros([0, num_negatives], np.int32), 0,
                     0)
  if isinstance(vocabulary, compact_vocabulary.CompactVocabulary):
    # No table of every token: a 10M-token vocabulary's would cost GiBs.
    ids = tokens.with_flat_values(tf.constant(
        vocabulary.rows(tokens.flat_values.numpy()), tf.int32))
    keep = tf.constant(skipgram.keep_probabilities(counts, subsample))
  elif data is None:
    ids = skipgram.id_lookup_table(vocabulary).lookup(tokens)
    keep = tf.constant(skipgram.keep_probabilities(counts, subsample))
  else:
    ids, keep = data.ids(tokens), data.keep
  oov = int(tf.reduce_sum(tf.cast(ids.flat_values < 0, tf.int32)))
  targets, contexts = skipgram.skipgram_pairs(ids, keep, window,
                                              tf.constant([seed, 0], tf.int64))
  targets, contexts = targets.numpy(), contexts.numpy()
  rng = np.random.default_rng(seed)
  if max_pairs and targets.size > max_pairs:
    kept = np.sort(rng.choice(targets.size, max_pairs, replace=False))
    targets, contexts = targets[kept], contexts[kept]
  p = skipgram_negatives.negative_sampling_probabilities(counts)
  negatives = rng.choice(len(vocabulary), size=(targets.size, num_negatives),
                         p=p).astype(np.int32)
  return EvalPairs(targets, contexts, negatives, sequences, oov)


def eval_pairs(sequences: Iterable[Sequence[str]], tokens: Sequence[str],
               counts: Sequence[int], window: int, num_negatives: int,
               subsample: float, seed: int = 0,
               max_pairs: int = MAX_PAIRS) -> EvalPairs:
  """Held-out pairs and negatives by the trainer's own definition.

  `tpu_embeddings.models.skipgram.skipgram_pairs` makes the pairs (OOV and
  subsampled tokens dropped before windows, word2vec reduced window); beyond
  `max_pairs` (0: no limit) a uniform sample of them is kept; negatives
  follow the trainer's unigram^0.75 distribution. Everything is drawn once
  from `seed`, so every model is scored on the same pairs and negatives.
  """
  skipgram.SkipGramConfig(window=window, negatives=num_negatives,
                          subsample=subsample).validate()
  sequences = [list(s) for s in sequences]
  ragged = tf.ragged.constant(sequences or [[]], dtype=tf.string,
                              ragged_rank=1)[:len(sequences)]
  return _pairs_of_tokens(ragged, tokens, counts, window, num_negatives,
                          subsample, seed, max_pairs)


def skipgram_loss(table: np.ndarray, targets: np.ndarray, contexts: np.ndarray,
                  negatives: np.ndarray,
                  output_table: Optional[np.ndarray] = None) -> Optional[float]:
  """Mean negative-sampling loss per pair, by the trainer's loss function.

  Targets are rows of `table`; contexts and negatives rows of `output_table`
  (word2vec's second table), or of `table` too when it is None (tied
  vectors). None when there are no pairs or the loss is not finite.
  """
  output_table = table if output_table is None else output_table
  return _loss(lambda ids: _rows(table, ids), targets, contexts, negatives,
               lambda ids: _rows(output_table, ids))


def _rows(source, ids) -> Any:
  # A NumPy table is read row by row: never a tensor copy of all of it.
  if isinstance(source, np.ndarray):
    return np.asarray(source[ids], np.float32)
  return tf.gather(tf.cast(source, tf.float32), ids)


def _loss(rows_of: Callable[[np.ndarray], Any], targets: np.ndarray,
          contexts: np.ndarray, negatives: np.ndarray,
          output_rows_of: Callable[[np.ndarray], Any]) -> Optional[float]:
  """The loss of `skipgram_loss`, reading the rows of each slice of pairs
  through `rows_of` (targets) and `output_rows_of` (contexts, negatives)."""
  if targets.size == 0:
    return None
  # Forward only, eagerly: a sample of MAX_PAIRS pairs is a few tens of
  # slices, cheaper than tracing a function for them.
  total = 0.0
  for start in range(0, targets.size, _PAIRS_PER_CALL):
    end = start + _PAIRS_PER_CALL
    total += float(batch_loss(rows_of(targets[start:end]),
                              output_rows_of(contexts[start:end]),
                              output_rows_of(negatives[start:end]),
                              global_batch_size=1))
  loss = float(total) / targets.size
  return loss if math.isfinite(loss) else None


def _eval_tokens(examples_uris: Sequence[str],
                 max_sequences: int) -> tf.RaggedTensor:
  """The first `max_sequences` eval sequences, as one ragged tensor."""
  parts, count = [], 0
  for uri in examples_uris:
    for block in examples_io.token_blocks(uri, EVAL_SPLIT):
      parts.append(block[:max_sequences - count])
      count += int(parts[-1].nrows())
      if count >= max_sequences:
        return tf.concat(parts, axis=0)
  if not parts:
    return tf.ragged.constant([[]], dtype=tf.string)[:0]
  return tf.concat(parts, axis=0)


def read_pairs(examples_uris: Sequence[str], tokens: Sequence[str],
               counts: Sequence[int], config: SkipGramConfig,
               max_sequences: int, seed: int,
               max_pairs: int = MAX_PAIRS,
               data: Optional[skipgram.SkipGramData] = None) -> EvalPairs:
  """`eval_pairs` of the first `max_sequences` eval sequences of the Examples
  (`data`: the run's SkipGramData of `config`, whose tables are reused).

  Raises FileNotFoundError when an Examples artifact has no eval split.
  """
  for uri in examples_uris:
    examples_io.split_files(uri, EVAL_SPLIT)
  skipgram.SkipGramConfig(window=config.window, negatives=config.negatives,
                          subsample=config.subsample).validate()
  return _pairs_of_tokens(_eval_tokens(examples_uris, max_sequences), tokens,
                          counts, config.window, config.negatives,
                          config.subsample, seed, max_pairs, data)


def loss_of_rows(rows_of: Callable[[np.ndarray], Any],
                 pairs: EvalPairs,
                 output_rows_of: Optional[Callable[[np.ndarray], Any]]
                 = None) -> Optional[float]:
  """`skipgram_loss` reading only the rows the pairs use, a slice of pairs
  at a time.

  `rows_of(ids)` returns table rows `ids` (any shape, repeats allowed; a
  float32 array or tensor), e.g. a gather from the live training
  variable, so a 10M-row table is never copied; `output_rows_of` the same
  of the output table (None: tied vectors).
  """
  return _loss(rows_of, pairs.targets, pairs.contexts, pairs.negatives,
               output_rows_of or rows_of)
