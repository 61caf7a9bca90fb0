"""Skip-gram training batches, the same as `SkipGramData.batches`, cheaper.

`SkipGramData` (skipgram.py) defines the batches: sequences shuffled per
epoch (seeded), turned into pairs and negatives a chunk of sequences at a
time from stateless draws keyed by the chunk's index, re-batched to exactly
`batch_size` pairs. Its cost is in work done per sequence (a parse and a
vocabulary lookup, each a dataset function call) and in many small integer
ops per chunk. `SkipGramBatches` makes the same batches:

* `id_sequences` reads Examples a block of records at a time (one parse and
  one vocabulary lookup per block), then splits the block into padded
  sequences of ids, so each sequence costs only its place in the shuffle;
* `batches` draws the same random numbers from the same seeds and hands the
  integer work to the SkipGramKeep, SkipGramWindows and SkipGramShuffle ops
  (tpu_embeddings/kernels); without them it runs skipgram.py's own
  functions. Either way batch i is SkipGramData's batch i, so a resumed run
  skips batches exactly as before.

Given an input pipeline's `tf.distribute.InputContext` (one per TPU host),
`id_sequences` reads every num_input_pipelines-th record and `batches` makes
batches of the pipeline's share of the global batch, its chunks and shared
negatives drawn from seeds no other pipeline uses. With one pipeline (the
default) nothing changes.
"""

from typing import Dict, Optional, Sequence

import tensorflow as tf

from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.core import input_pipelines
from tpu_embeddings.kernels import library
from tpu_embeddings.models import skipgram
from tpu_embeddings.models import skipgram_negatives
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE

# Records parsed and looked up together (a block is padded to its longest
# sequence until it is split into sequences).
RECORDS_PER_READ = 256


def _plain(fn):
  """`fn` traced as written: no control flow on tensors to convert, and
  autograph's conversion is most of a dataset function's trace."""
  return tf.autograph.experimental.do_not_convert(fn)


def _seeds(config: SkipGramConfig, index):
  """SkipGramData's seeds of chunk `index`: (keep, window, order, slot,
  coin), in the order skipgram_pairs and sample_negatives split them."""
  chunk_seed = tf.random.experimental.stateless_fold_in(
      tf.constant([config.seed, 0], tf.int64), index)
  pair_seed, negative_seed = tf.unstack(
      tf.random.experimental.stateless_split(chunk_seed, 2))
  keep_seed, window_seed, order_seed = tf.unstack(
      tf.random.experimental.stateless_split(
          tf.cast(pair_seed, tf.int64), 3))
  slot_seed, coin_seed = tf.unstack(
      tf.random.experimental.stateless_split(
          tf.cast(negative_seed, tf.int64), 2))
  return keep_seed, window_seed, order_seed, slot_seed, coin_seed


class SkipGramBatches:
  """`SkipGramData.batches` from sequences of ids, with the pair ops."""

  def __init__(self, data: skipgram.SkipGramData, use_ops: bool = True):
    # The sampler's tables (id lookup, keep probabilities, the negatives'
    # alias table) are shared, not built again.
    self.config = data.config
    self.vocabulary_size = data.vocabulary_size
    self._ids, self._keep = data.ids, data.keep
    self._accept, self._alias = data.negative_sampler
    self._tf_pairs = data.pairs  # without the ops
    self._ops = library.load() if use_ops else None

  @property
  def uses_ops(self) -> bool:
    return self._ops is not None

  def _blocks(self, examples_uris: Sequence[str], split: str,
              cache: bool = False,
              context: Optional[tf.distribute.InputContext] = None
              ) -> tf.data.Dataset:
    """The split's records (`context`'s share of each file's) a block at a
    time, as `(ids [R, L], lengths [R])`: looked up (OOV = -1) and padded
    with -1 past each length. With `cache`, the first pass keeps the
    looked-up ids in memory (unpadded) and later passes read them from there
    instead of parsing again."""
    context = context or input_pipelines.single()
    spec = {examples_io.TOKENS_FEATURE: tf.io.RaggedFeature(tf.string)}

    def looked_up(records):
      tokens = tf.io.parse_example(records, spec)[examples_io.TOKENS_FEATURE]
      return (self._ids(tokens.flat_values),
              tf.cast(tokens.row_lengths(), tf.int32))

    def padded(ids, lengths):
      # Splitting a dense block into rows is a copy per row; splitting a
      # ragged one goes through a variant per row, several times slower.
      return (tf.RaggedTensor.from_row_lengths(ids, lengths).to_tensor(-1),
              lengths)

    datasets = [
        input_pipelines.shard(
            tf.data.TFRecordDataset(examples_io.split_files(uri, split),
                                    compression_type='GZIP'), context)
        .batch(RECORDS_PER_READ)
        .map(_plain(looked_up), num_parallel_calls=tf.data.AUTOTUNE,
             deterministic=True) for uri in examples_uris]
    ds = datasets[0]
    for other in datasets[1:]:
      ds = ds.concatenate(other)
    if cache:
      ds = ds.cache()
    return ds.map(_plain(padded), num_parallel_calls=tf.data.AUTOTUNE,
                  deterministic=True)

  def id_sequences(self, examples_uris: Sequence[str], split: str,
                   cache: bool = False,
                   input_context: Optional[tf.distribute.InputContext] = None
                   ) -> tf.data.Dataset:
    """The split's sequences, in file order, as `(ids, length)`: the
    sequences `examples_io.token_dataset` reads, looked up (OOV = -1) and
    padded with -1 past `length`; with `input_context`, that pipeline's
    share (every num_input_pipelines-th record of each file). `cache`:
    passes after the first read the ids from memory (4 bytes a token)."""
    return self._blocks(examples_uris, split, cache,
                        input_context).unbatch()

  def expected_kept(self, examples_uris: Sequence[str],
                    split: str) -> tf.data.Dataset:
    """Per block of records, each sequence's expected in-vocabulary tokens
    kept by subsampling ([R] float32; `skipgram.expected_pairs` of them)."""
    keep = self._keep

    def kept(ids, lengths):
      del lengths  # padding is -1, as OOV is
      rows = tf.gather(keep, tf.maximum(ids, 0))
      return tf.reduce_sum(tf.where(ids >= 0, rows, tf.zeros_like(rows)),
                           axis=1)
    return self._blocks(examples_uris, split).map(
        _plain(kept), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

  def pairs_per_epoch(self, examples_uris: Sequence[str],
                      split: str) -> float:
    """Expected (target, context) pairs of one pass over the split, from
    each sequence's `expected_kept` (a read of blocks, no pairs drawn)."""
    window = self.config.window
    return sum(float(skipgram.expected_pairs(kept.numpy(), window).sum())
               for kept in self.expected_kept(examples_uris, split))

  def ids_of(self, sequences: tf.data.Dataset) -> tf.data.Dataset:
    """`id_sequences` of a dataset of token sequences (one call per
    sequence: for data that is not an Examples artifact)."""
    return sequences.map(
        lambda tokens: (self._ids(tokens), tf.size(tokens)),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

  def pairs(self, index, ids) -> Dict[str, tf.Tensor]:
    """Pairs and negatives of chunk `index`: SkipGramData's, exactly."""
    if not isinstance(ids, tf.RaggedTensor):
      ids = tf.RaggedTensor.from_tensor(ids)
    if self._ops is None:
      return self._tf_pairs(index, ids)
    c = self.config
    keep_seed, window_seed, order_seed, slot_seed, coin_seed = _seeds(
        c, index)
    values = ids.flat_values
    uniform = tf.random.stateless_uniform(tf.shape(values), seed=keep_seed)
    kept, splits = self._ops.skip_gram_keep(
        values, tf.cast(ids.row_splits, tf.int64), uniform, self._keep)
    reach = tf.random.stateless_uniform(
        tf.shape(kept), seed=window_seed, minval=1, maxval=c.window + 1,
        dtype=tf.int32)
    target, context = self._ops.skip_gram_windows(kept, splits, reach)
    pairs = tf.shape(target)[0]
    order = tf.random.experimental.stateless_shuffle(tf.range(pairs),
                                                     seed=order_seed)
    accept, alias = self._accept, self._alias
    shape = tf.stack([pairs, skipgram_negatives.negatives_per_pair(c)])
    slot = tf.random.stateless_uniform(
        shape, seed=slot_seed, minval=0,
        maxval=tf.shape(accept, out_type=tf.int32)[0], dtype=tf.int32)
    coin = tf.random.stateless_uniform(shape, seed=coin_seed)
    target, context, negatives = self._ops.skip_gram_shuffle(
        target, context, order, slot, coin, accept, alias)
    return {TARGET_FEATURE: target, CONTEXT_FEATURE: context,
            NEGATIVES_FEATURE: negatives}

  def _chunk_pairs(self, index, chunk):
    padded, lengths = chunk
    return self.pairs(index, tf.RaggedTensor.from_tensor(padded,
                                                         lengths=lengths))

  def chunks(self, id_sequences: tf.data.Dataset,
             context: Optional[tf.distribute.InputContext] = None
             ) -> tf.data.Dataset:
    """(index, (padded ids, lengths)) of each chunk of sequences, in order
    (what `batches` turns into pairs, after its shuffle); with an input
    pipeline's `context`, the index among all pipelines' chunks."""
    context = context or input_pipelines.single()
    chunks = id_sequences.padded_batch(self.config.sequences_per_chunk,
                                       padding_values=(-1, 0)).enumerate()
    if context.num_input_pipelines == 1:
      return chunks
    return chunks.map(lambda index, chunk: (
        input_pipelines.global_index(index, context), chunk))

  def chunk_gives_pairs(self, index, chunk) -> bool:
    """Whether chunk `index` gives pairs, from its keep draw alone: every
    window reaches at least one token, so a chunk gives pairs exactly when
    a sequence keeps two tokens (no pairs are made)."""
    padded, lengths = chunk
    ids = tf.RaggedTensor.from_tensor(padded, lengths=lengths)
    values = ids.flat_values
    uniform = tf.random.stateless_uniform(tf.shape(values),
                                          seed=_seeds(self.config, index)[0])
    kept = (values >= 0) & (uniform < tf.gather(self._keep,
                                                tf.maximum(values, 0)))
    per_sequence = tf.reduce_sum(ids.with_flat_values(tf.cast(kept, tf.int32)),
                                 axis=1)
    return bool(tf.reduce_any(per_sequence >= 2))

  def yields_pairs(self, id_sequences: tf.data.Dataset) -> bool:
    """Whether one pass over `id_sequences`, chunked in file order, gives
    any pair; stops at the first chunk that does, eagerly (nothing to
    trace). Only a split giving none (too few in-vocabulary tokens per
    sequence, or all subsampled away) is read whole."""
    return any(self.chunk_gives_pairs(index, chunk)
               for index, chunk in self.chunks(id_sequences))

  def batches(self, id_sequences: tf.data.Dataset, epochs: int = 0,
              skip: int = 0,
              input_context: Optional[tf.distribute.InputContext] = None
              ) -> tf.data.Dataset:
    """`SkipGramData.batches` of the sequences `id_sequences` (from
    `id_sequences` or `ids_of`) holds: `epochs` passes (0 = endless) after
    `skip` batches. With `input_context`, batches of that input pipeline's
    share of batch_size pairs (`id_sequences` then holds its sequences)."""
    c = self.config
    context = input_context or input_pipelines.single()
    ds = id_sequences.shuffle(c.shuffle_buffer, seed=c.seed,
                              reshuffle_each_iteration=True)
    ds = ds.repeat(epochs if epochs > 0 else None)
    ds = self.chunks(ds, context).map(_plain(self._chunk_pairs),
                                     num_parallel_calls=tf.data.AUTOTUNE,
                                     deterministic=True)
    ds = skipgram_negatives.with_shared_negatives(
        ds.rebatch(input_pipelines.pipeline_batch_size(c.batch_size, context),
                   drop_remainder=True), self._accept, self._alias, c,
        context)
    if skip:
      ds = ds.skip(skip)
    return ds.prefetch(tf.data.AUTOTUNE)
