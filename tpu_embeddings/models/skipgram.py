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

from typing import Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.core import input_pipelines
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE

NEGATIVE_SAMPLING_POWER = 0.75


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


def negative_sampling_probabilities(counts: Sequence[int],
                                    power: float = NEGATIVE_SAMPLING_POWER
                                   ) -> np.ndarray:
  """unigram^power over ids, normalized (the distribution negatives follow)."""
  weights = np.power(np.asarray(counts, dtype=np.float64), power)
  total = weights.sum()
  if not total > 0:
    raise ValueError('skip-gram: vocabulary counts are all zero; negatives '
                     'cannot be sampled')
  return weights / total


def alias_table(probabilities: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """Walker/Vose alias table: (accept [V] float32, alias [V] int32).

  Sampling draws a uniform slot i and a uniform u and returns i if
  u < accept[i] else alias[i]: exact, O(1) per sample, two gathers.

  Built without a Python loop (a 10M-row vocabulary in about a second):
  the rows below the mean ("small") are filled in order by the rows above
  it ("large"), also in order. Large row j gives to each small row while it
  has given at most its excess e_j, so small row i goes to the first large
  row whose cumulative excess reaches the deficits before row i; a large row
  that gives more than its excess becomes small, its slot filled by the next
  large row. Every row's mass (its own slot's share plus what it gave) is
  then its probability, as in Vose's loop.
  """
  n = len(probabilities)
  scaled = np.asarray(probabilities, dtype=np.float64) * n
  small = np.flatnonzero(scaled < 1.0)
  large = np.flatnonzero(scaled >= 1.0)
  accept = np.ones(n, np.float64)
  alias = np.arange(n, dtype=np.int64)
  if not small.size or not large.size:  # uniform, up to rounding
    return accept.astype(np.float32), alias.astype(np.int32)
  gaps = 1.0 - scaled[small]
  deficit = np.cumsum(gaps)  # D(i): deficits of rows <= i
  before = deficit - gaps  # D(i - 1)
  excess = np.cumsum(scaled[large] - 1.0)  # E(j)
  giver = np.searchsorted(excess, before, side='left')
  # Past the last large row only rounding is left: those slots keep 1.
  served = giver < len(large)
  accept[small[served]] = scaled[small[served]]
  alias[small[served]] = large[giver[served]]
  # What large row j gave beyond its excess: D(last small it served) - E(j).
  count = np.searchsorted(before, excess, side='right')
  given = np.where(count > 0, deficit[np.maximum(count - 1, 0)], 0.0)
  over = given - excess
  spent = np.flatnonzero(over[:-1] > 0.0)  # the last large row has no next
  accept[large[spent]] = 1.0 - over[spent]
  alias[large[spent]] = large[spent + 1]
  return accept.astype(np.float32), alias.astype(np.int32)


def sample_negatives(accept: tf.Tensor, alias: tf.Tensor, shape,
                     seed) -> tf.Tensor:
  """int32 ids of `shape` drawn through an alias table (see alias_table)."""
  seed = tf.cast(seed, tf.int64)
  slot_seed, coin_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, 2))
  n = tf.shape(accept, out_type=tf.int32)[0]
  slot = tf.random.stateless_uniform(shape, seed=slot_seed, minval=0,
                                     maxval=n, dtype=tf.int32)
  coin = tf.random.stateless_uniform(shape, seed=coin_seed)
  return tf.where(coin < tf.gather(accept, slot), slot, tf.gather(alias, slot))


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
    accept, alias = alias_table(negative_sampling_probabilities(counts))
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

  def _pairs(self, index, ids):
    """Pairs and negatives of chunk `index` (a ragged batch of id sequences)."""
    c = self.config
    chunk_seed = tf.random.experimental.stateless_fold_in(
        tf.constant([c.seed, 0], tf.int64), index)
    pair_seed, negative_seed = tf.unstack(
        tf.random.experimental.stateless_split(chunk_seed, 2))
    target, context = skipgram_pairs(ids, self._keep, c.window, pair_seed)
    negatives = sample_negatives(
        self._accept, self._alias,
        tf.stack([tf.shape(target)[0], negatives_per_pair(c)]), negative_seed)
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
    ds = ds.map(self._pairs, num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True)
    ds = with_shared_negatives(ds.rebatch(c.batch_size, drop_remainder=True),
                               self._accept, self._alias, c)
    if skip:
      ds = ds.skip(skip)
    return ds.prefetch(tf.data.AUTOTUNE)


def negatives_per_pair(config: SkipGramConfig) -> int:
  """Negatives drawn with each pair: K, or none when batches share them."""
  return 0 if config.shared_negatives else config.negatives


# Shared negatives are drawn for up to this many pairs' batches at once: one
# call of a dataset's map costs tens of microseconds, more than a draw for a
# small batch (the item config's 512 pairs: 8 x 16 ids).
DRAW_PAIRS = 1 << 17
DRAW_MOST_BATCHES = 64


def draw_batches(pipeline_batch_size: int) -> int:
  """Batches whose shared negatives one draw makes."""
  return max(1, min(DRAW_MOST_BATCHES, DRAW_PAIRS // pipeline_batch_size))


def with_shared_negatives(batches: tf.data.Dataset, accept: tf.Tensor,
                          alias: tf.Tensor, config: SkipGramConfig,
                          context: Optional[tf.distribute.InputContext] = None
                          ) -> tf.data.Dataset:
  """`batches` with each batch's shared negatives ([groups, S]), or
  `batches` as they are when each pair has its own. The negatives of
  `draw_batches` consecutive batches are drawn at once, from the index of
  the first of them: batch i's are the same whether a run started at 0 or
  skipped to i (resumes skip batches after this). With an input pipeline's
  `context`, its batches hold its share of the groups."""
  if not config.shared_negatives:
    return batches
  context = context or input_pipelines.single()
  groups = config.negative_groups
  if groups % context.num_input_pipelines:
    raise ValueError(
        f'the batch\'s {groups} groups of {config.group_size} pairs sharing '
        f'negatives do not split over the {context.num_input_pipelines} '
        'input pipelines; choose batch_size and negative_group so that the '
        'groups are a multiple of them')
  shape = [groups // context.num_input_pipelines, config.shared_negatives]
  at_once = draw_batches(
      input_pipelines.pipeline_batch_size(config.batch_size, context))

  def shared(index, stack):
    seed = tf.random.experimental.stateless_fold_in(
        tf.constant([config.seed, 1], tf.int64),
        input_pipelines.global_index(index * at_once, context))
    count = tf.shape(tf.nest.flatten(stack)[0])[:1]
    negatives = sample_negatives(accept, alias, tf.concat([count, shape], 0),
                                 seed)
    return {**stack,
            NEGATIVES_FEATURE: tf.ensure_shape(negatives, [None] + shape)}

  return batches.batch(at_once).enumerate().map(
      tf.autograph.experimental.do_not_convert(shared)).unbatch()
