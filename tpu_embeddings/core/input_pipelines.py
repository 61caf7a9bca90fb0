"""One input pipeline's share of a training run's batches.

Training reads its input through a factory called once per input pipeline
(one per host on a multi-host TPU) with a `tf.distribute.InputContext`:
`num_input_pipelines`, this pipeline's `input_pipeline_id` and the replicas in
sync. Each pipeline builds batches of `pipeline_batch_size` rows from its own
part of the data; the batches of all pipelines at one step make the global
batch. With one pipeline (CPU, a single TPU host) a share is the whole input,
unchanged.

Two ways to a share:
  * read one's own part of the data (`shard` of records or sequences) and
    batch it to `pipeline_batch_size`: each pipeline reads only its part;
  * `row_share`: cut every global batch of a dataset built whole into
    `num_input_pipelines` row shares and keep this pipeline's; the steps see
    the global batches of one pipeline exactly, at the cost of every
    pipeline reading all the data.
"""

from typing import Callable

import tensorflow as tf

# Builds one input pipeline's (ids, extras) batches from its context.
InputFn = Callable[[tf.distribute.InputContext], tf.data.Dataset]


def single() -> tf.distribute.InputContext:
  """The context of a run with one input pipeline and one replica (CPU)."""
  return tf.distribute.InputContext()


def pipeline_batch_size(global_batch_size: int,
                        context: tf.distribute.InputContext) -> int:
  """Rows of one pipeline's batches: the global batch over the pipelines."""
  pipelines = context.num_input_pipelines
  if global_batch_size % pipelines:
    raise ValueError(
        f'batch_size {global_batch_size} does not split evenly over the '
        f'{pipelines} input pipelines (hosts); make it a multiple of '
        f'{pipelines}')
  return global_batch_size // pipelines


def shard(dataset: tf.data.Dataset,
          context: tf.distribute.InputContext) -> tf.data.Dataset:
  """Every `num_input_pipelines`-th element of `dataset` from this
  pipeline's id: the pipelines' shards are disjoint and cover `dataset`.
  `dataset` itself with one pipeline."""
  if context.num_input_pipelines == 1:
    return dataset
  return dataset.shard(context.num_input_pipelines,
                       context.input_pipeline_id)


def global_index(index, context: tf.distribute.InputContext):
  """The index among all pipelines' elements of this pipeline's element
  `index` (elements interleaved by pipeline): seeds keyed by it differ
  between pipelines, and equal `index` with one pipeline."""
  if context.num_input_pipelines == 1:
    return index
  return (index * context.num_input_pipelines +
          context.input_pipeline_id)


def _leading_dims(element_spec) -> set:
  return {spec.shape[0] for spec in tf.nest.flatten(element_spec)}


def split_rows(dataset: tf.data.Dataset, pieces: int) -> tf.data.Dataset:
  """Each element of `dataset` as `pieces` consecutive elements, every
  tensor's rows cut evenly, whatever its row count (skip-gram's shared
  negatives have fewer rows than a batch has pairs: a group of pairs and
  its negatives stay in one piece). Ragged tensors are cut only when every
  tensor has the batch's rows."""
  if pieces == 1:
    return dataset
  dims = _leading_dims(dataset.element_spec)
  if None in dims:
    raise ValueError('input batches must have a static number of rows to '
                     'be split over input pipelines or replicas (batch with '
                     'drop_remainder=True)')
  for rows in dims:
    if rows % pieces:
      raise ValueError(f'batches of {rows} rows do not split evenly into '
                       f'{pieces} shares (input pipelines or replicas)')
  if len(dims) == 1:
    return dataset.rebatch(dims.pop() // pieces, drop_remainder=True)

  def cut(t):
    if isinstance(t, tf.RaggedTensor):
      raise ValueError('ragged features cannot be split by rows together '
                       'with features of other row counts')
    rest = t.shape.as_list()
    return tf.reshape(t, [pieces, rest[0] // pieces] + rest[1:])

  return dataset.map(lambda *e: tf.nest.map_structure(cut, e)).unbatch()


def row_share(dataset: tf.data.Dataset,
              context: tf.distribute.InputContext) -> tf.data.Dataset:
  """This pipeline's rows of every element of `dataset` (global batches):
  `split_rows` into one piece per pipeline, then `shard`."""
  return shard(split_rows(dataset, context.num_input_pipelines), context)


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """`dataset` with tf.data's autotuning off.

  An autotuned iterator runs a model thread that its destructor joins, and
  in TensorFlow 2.15 that join can wait out the thread's sleep: on 12M
  tokens the trainer sat idle for 30 s after its last step in about half of
  the runs. Without autotuning, AUTOTUNE parallelism is the machine's cores
  and there is no model thread to wait for.
  """
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.with_options(options)
