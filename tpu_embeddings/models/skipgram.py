"""Skip-gram with negative sampling: the training core shared by CPU and TPU.

Everything here is plain TensorFlow and runs the same for both adapters:

* input pipeline: token sequences -> ids through the vocabulary (OOV tokens
  dropped), frequent-token subsampling, a word2vec "reduced window" around
  every kept token -> (target, context) pairs, `K` negatives per pair drawn
  from the unigram^0.75 distribution of the vocabulary counts;
* (skipgram_loss.py) the loss on activations and its gradients.

The batches are `{'target': [B], 'context': [B], 'negatives': [B, K]}` int32
ids; with shared negatives, `negatives` is `[B/G, S]`: each group of G
consecutive pairs scores the same S. The CPU adapter looks them up as they
are; the TPU adapter enqueues `negatives` as `[B, K, 1]` (TPUEmbedding
reduces the last dimension of a dense input), so both see activations
`target [B, D]`, `context [B, D]`, `negatives [B, K, D]` (shared:
`[B/G, S, D]`).

The pipeline is deterministic given the seed (a seeded per-epoch shuffle, then
stateless random ops keyed by the chunk index), so a resumed run continues
exactly where the checkpointed one stopped by skipping the batches it already
trained on.
"""

from typing import Sequence, Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.models import skipgram_negatives
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE


def keep_probabilities(counts: Sequence[int], subsample: float) -> np.ndarray:
  """Per-id probability of keeping a token (word2vec subsampling)."""
  counts = np.asarray(counts, dtype=np.float64)
  if subsample <= 0:
    return np.ones_like(counts, dtype=np.float32)
  freq = counts / max(counts.sum(), 1.0)
  with np.errstate(divide='ignore', invalid='ignore'):
    keep = (np.sqrt(freq / subsample) + 1.0) * subsample / freq
  keep = np.where(freq > 0, keep, 1.0)
  return np.minimum(keep, 1.0).astype(np.float32)


def id_lookup_table(tokens: Sequence[str]) -> tf.lookup.StaticHashTable:
  """token -> row id; OOV -> -1 (vocabulary_file.OOV_ID)."""
  return tf.lookup.StaticHashTable(
      tf.lookup.KeyValueTensorInitializer(
          tf.constant(list(tokens), tf.string),
          tf.range(len(tokens), dtype=tf.int32)),
      default_value=-1)


def skipgram_pairs(ids, keep_prob: tf.Tensor, window: int,
                   seed) -> Tuple[tf.Tensor, tf.Tensor]:
  """(target, context) pairs of a ragged batch of id sequences.

  OOV ids (< 0) and subsampled tokens are removed before windows are formed,
  so they neither appear in pairs nor separate their neighbours (word2vec).
  `seed` is a stateless seed, shape [2].
  """
  if not isinstance(ids, tf.RaggedTensor):  # equal-length sequences batch dense
    ids = tf.RaggedTensor.from_tensor(ids)
  seed = tf.cast(seed, tf.int64)
  keep_seed, window_seed, order_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, 3))
  values = ids.flat_values
  rows = ids.value_rowids()
  valid = values >= 0
  u = tf.random.stateless_uniform(tf.shape(values), seed=keep_seed)
  keep = valid & (u < tf.gather(keep_prob, tf.maximum(values, 0)))
  values = tf.boolean_mask(values, keep)
  rows = tf.boolean_mask(rows, keep)
  reach = tf.random.stateless_uniform(
      tf.shape(values), seed=window_seed, minval=1, maxval=window + 1,
      dtype=tf.int32)
  # Every kept token is the target of the tokens within its reach on both
  # sides, clipped to its sequence: offsets -left..-1 and 1..right. Built in
  # a few ops whatever the window (a loop over distances made the graph, and
  # its tracing, grow with the window: seconds at window 50).
  position = tf.range(tf.size(values))
  first = tf.gather(tf.math.segment_min(position, rows), rows)
  last = tf.gather(tf.math.segment_max(position, rows), rows)
  offsets = tf.ragged.range(-tf.minimum(reach, position - first),
                            tf.minimum(reach, last - position))
  offset = offsets.flat_values
  offset += tf.cast(offset >= 0, offset.dtype)
  target_at = tf.cast(offsets.value_rowids(), tf.int32)
  target = tf.gather(values, target_at)
  context = tf.gather(values, target_at + offset)
  # Each pair goes anywhere in the chunk, not with its neighbours: a row's
  # gradient is summed over a batch, so a batch holding a token's window
  # together would move its row by all of those pairs at once, unlike
  # word2vec's one pair at a time (faster steps, as the row stays in cache,
  # but worse tables).
  order = tf.random.experimental.stateless_shuffle(
      tf.range(tf.shape(target)[0]), seed=order_seed)
  return tf.gather(target, order), tf.gather(context, order)


def expected_pairs(kept, window: int) -> np.ndarray:
  """Expected (target, context) pairs of sequences of `kept` tokens each.

  Every token reaches distance d <= window with probability
  (window - d + 1) / window (the reduced window), in both directions, within
  its sequence. `kept` may be fractional (an expected count after
  subsampling).
  """
  kept = np.asarray(kept, dtype=np.float64)
  total = np.zeros_like(kept)
  for d in range(1, window + 1):
    total += 2.0 * np.maximum(kept - d, 0.0) * (window - d + 1) / window
  return total


class SkipGramData:
  """Turns a dataset of token sequences into skip-gram training batches."""

  def __init__(self, tokens: Sequence[str], counts: Sequence[int],
               config: SkipGramConfig):
    if len(tokens) != len(counts) or not tokens:
      raise ValueError('skip-gram: the vocabulary needs one count per token '
                       'and at least one token')
    self.config = config
    self.vocabulary_size = len(tokens)
    self._table = id_lookup_table(tokens)
    self._keep = tf.constant(keep_probabilities(counts, config.subsample))
    accept, alias = skipgram_negatives.alias_table(
        skipgram_negatives.negative_sampling_probabilities(counts))
    self._accept = tf.constant(accept)
    self._alias = tf.constant(alias)

  def ids(self, tokens: tf.Tensor) -> tf.Tensor:
    """Row ids of `tokens` (dense or ragged; OOV -1)."""
    return self._table.lookup(tokens)

  @property
  def keep(self) -> tf.Tensor:
    """Each vocabulary row's subsampling keep probability ([V] float32)."""
    return self._keep

  @property
  def negative_sampler(self) -> Tuple[tf.Tensor, tf.Tensor]:
    """The negatives' alias table, (accept [V] float32, alias [V] int32)."""
    return self._accept, self._alias

  def pairs(self, index, ids):
    """Pairs and negatives of chunk `index` (a ragged batch of id sequences),
    by TensorFlow's ops (SkipGramBatches' ops give the same)."""
    c = self.config
    chunk_seed = tf.random.experimental.stateless_fold_in(
        tf.constant([c.seed, 0], tf.int64), index)
    pair_seed, negative_seed = tf.unstack(
        tf.random.experimental.stateless_split(chunk_seed, 2))
    target, context = skipgram_pairs(ids, self._keep, c.window, pair_seed)
    negatives = skipgram_negatives.sample_negatives(
        self._accept, self._alias,
        tf.stack([tf.shape(target)[0],
                  skipgram_negatives.negatives_per_pair(c)]), negative_seed)
    return {TARGET_FEATURE: target, CONTEXT_FEATURE: context,
            NEGATIVES_FEATURE: negatives}

  def batches(self, sequences: tf.data.Dataset, epochs: int = 0,
              skip: int = 0) -> tf.data.Dataset:
    """Training batches of `epochs` passes (0 = endless), after `skip` batches.

    Sequences are shuffled per epoch (seeded), turned into pairs a chunk at a
    time and re-batched so that every batch has exactly `batch_size` pairs
    (the static shapes a TPU needs; pairs flow across epoch boundaries and
    only the remainder of the last epoch is dropped).
    """
    c = self.config
    ds = sequences.shuffle(c.shuffle_buffer, seed=c.seed,
                           reshuffle_each_iteration=True)
    ds = ds.repeat(epochs if epochs > 0 else None)
    ds = ds.map(self._table.lookup, num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True)
    ds = ds.ragged_batch(c.sequences_per_chunk).enumerate()
    ds = ds.map(self.pairs, num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True)
    ds = skipgram_negatives.with_shared_negatives(
        ds.rebatch(c.batch_size, drop_remainder=True), self._accept,
        self._alias, c)
    if skip:
      ds = ds.skip(skip)
    return ds.prefetch(tf.data.AUTOTUNE)
