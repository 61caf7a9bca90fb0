"""Skip-gram's negatives: the unigram^0.75 distribution over the
vocabulary, its alias table, draws of ids from it, and each batch's shared
negatives (skipgram.py's pipeline attaches them; the CPU and TPU adapters
read them as they are).
"""

from typing import Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.core import input_pipelines
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE

NEGATIVE_SAMPLING_POWER = 0.75


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
  `batches` as they are when each pair has its own.

  The negatives come from a stream of their own, zipped to the batches:
  `draw_batches` batches' worth at a time, from the index of the first of
  them, so batch i's are the same whether a run started at 0 or skipped to
  i (resumes skip batches after this), and no batch waits for the pairs of
  the batches after it. With an input pipeline's `context`, its batches
  hold its share of the groups."""
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

  def drawn(index):
    seed = tf.random.experimental.stateless_fold_in(
        tf.constant([config.seed, 1], tf.int64),
        input_pipelines.global_index(index * at_once, context))
    return sample_negatives(accept, alias, [at_once] + shape, seed)

  negatives = tf.data.Dataset.counter().map(
      tf.autograph.experimental.do_not_convert(drawn)).unbatch()
  return tf.data.Dataset.zip(batches, negatives).map(
      tf.autograph.experimental.do_not_convert(
          lambda batch, ids: {**batch, NEGATIVES_FEATURE: ids}))
