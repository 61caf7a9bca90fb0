"""The training input of a module file: its FEATURES read from Examples.

Records of the train split (an input pipeline's share of them: every
num_input_pipelines-th record) are shuffled (seeded, per epoch), repeated,
batched to the pipeline's share of the global batch (every batch full: a TPU
needs static shapes) and parsed a batch at a time: each spec feature's
tokens become ragged [B, None] int32 rows of its vocabulary (`ctx.to_ids`),
and `extras_fn(ids, examples, ctx)` adds dense inputs made on the host. The
dataset is deterministic given the seed, so a resumed run skips the batches
it already trained on and continues exactly.
"""

from typing import Optional, Sequence

import tensorflow as tf

from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.core import input_pipelines
from tpu_embeddings.core.splits import TRAIN_SPLIT


def batches(module, spec, ctx, epochs: int,
            input_context: Optional[tf.distribute.InputContext] = None
            ) -> tf.data.Dataset:
  """(ids, extras) batches of `epochs` passes (0: endless) of the records
  of input pipeline `input_context` (default: the only one)."""
  context = input_context or input_pipelines.single()
  settings = ctx.settings
  files = raw_features.split_files(ctx.examples_uris, TRAIN_SPLIT)
  kinds = {f.name: ctx.feature_kinds[f.name] for f in spec.features}

  def parse(serialized):
    raw = raw_features.parse_tokens(serialized, kinds)
    ids = ctx.to_ids(raw)
    return ids, module.extras(ids, serialized, ctx)

  ds = input_pipelines.shard(raw_features.records(files), context).shuffle(
      settings.shuffle_buffer, seed=settings.seed,
      reshuffle_each_iteration=True)
  ds = ds.repeat(epochs if epochs > 0 else None)
  ds = ds.batch(input_pipelines.pipeline_batch_size(ctx.global_batch_size,
                                                    context),
                drop_remainder=True)
  ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  return ds.prefetch(tf.data.AUTOTUNE)


def count_records(files: Sequence[str], limit: int = 0) -> int:
  """Records of `files` (at most `limit`, when given)."""
  ds = raw_features.records(files)
  return int((ds.take(limit) if limit else ds).reduce(
      tf.constant(0, tf.int64), lambda n, _: n + 1))


def examples_per_epoch(ctx) -> float:
  return float(count_records(
      raw_features.split_files(ctx.examples_uris, TRAIN_SPLIT)))


def check_input(ctx):
  """The train split must fill at least one global batch."""
  files = raw_features.split_files(ctx.examples_uris, TRAIN_SPLIT)
  n = count_records(files, ctx.global_batch_size)
  if n < ctx.global_batch_size:
    raise ValueError(
        f'examples {", ".join(ctx.examples_uris)}: split {TRAIN_SPLIT!r} has '
        f'{n} records, fewer than one batch (batch_size '
        f'{ctx.global_batch_size}); lower trainer.batch_size or add data')
