"""TPU adapter: `TPUEmbedding` under `TPUStrategy`, the dense model beside it.

The mid-level API's documented pattern. On the host, per step:
`enqueue(ids, training=True)`; on the TPU, in `strategy.run`: `dequeue()` the
activations, the module's loss on them (this replica's share of the global
batch), its gradients w.r.t. the activations and the model's variables, then
`apply_gradients` (the TPU applies the embedding optimizer itself: duplicate
ids summed, one update per id) and the dense optimizer's `apply_gradients`.
A module without a dense model may give the gradients w.r.t. the
activations itself (`activation_gradients`), as the CPU adapter's fast step.

TPUEmbedding reduces the last dimension of a rank >= 2 dense input and
rejects one whose last dimension is not 1, so such ids ([B, K]) are enqueued
as [B, K, 1]; the activations then have the shapes the CPU adapter sees
([B, K, D]). Ragged ids [B, None] give combined [B, D] activations on both.

The input is a factory (`InputFn`) that `distribute_datasets_from_function`
calls once per input pipeline (host) with its InputContext; each pipeline
builds its share of every global batch. Each replica gets an even share of
its pipeline's rows of every feature, so with shared negatives ([B/G, S])
each replica holds whole groups of pairs with their negatives
(`input_pipelines.split_rows`). With one host the replicas see what
`experimental_distribute_dataset` of the global batches gave them.
"""

from typing import Dict, Optional

import tensorflow as tf

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.core import input_pipelines
from tpu_embeddings.core.input_pipelines import InputFn
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import dense_model
from tpu_embeddings.training import training_loop
from tpu_embeddings.training.learning_rate import LinearDecay


def tpu_features(ids: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
  """Ids as TPUEmbedding takes them: dense rank >= 2 ids get a trailing 1."""
  return {name: tf.expand_dims(t, -1)
          if not isinstance(t, tf.RaggedTensor) and t.shape.rank >= 2 else t
          for name, t in ids.items()}


def per_replica_input_shapes(ids_spec, replicas: int
                             ) -> Dict[str, tf.TensorShape]:
  """Input shapes of `tpu_features` per replica, for `TPUEmbedding.build`,
  from the global batch's ids spec (`dataset.element_spec[0]`)."""
  shapes = {}
  for name, spec in ids_spec.items():
    dims = spec.shape.as_list()
    if dims[0] and dims[0] % replicas:
      raise ValueError(
          f'feature {name!r} has {dims[0]} rows per batch, which do not '
          f'split evenly over the {replicas} TPU replicas (shared negatives: '
          f'choose batch_size and negative_group so that the batch holds a '
          f'multiple of {replicas} groups)')
    dims[0] = dims[0] // replicas if dims[0] else dims[0]
    if not isinstance(spec, tf.RaggedTensorSpec) and len(dims) >= 2:
      dims.append(1)
    shapes[name] = tf.TensorShape(dims)
  return shapes


def replica_batches(input_fn: InputFn, replicas: int) -> InputFn:
  """For an input pipeline's context: its batches from `input_fn`, each
  split by rows into one share per replica of the pipeline
  (`input_pipelines.split_rows`), the n-th share for its n-th replica."""
  def per_pipeline(context: tf.distribute.InputContext) -> tf.data.Dataset:
    return input_pipelines.split_rows(
        input_fn(context), replicas // context.num_input_pipelines)
  return per_pipeline


def distribute(strategy: tf.distribute.Strategy, input_fn: InputFn):
  """Per-replica values of `strategy` from `input_fn`, called once per input
  pipeline (host) with its InputContext (`replica_batches`)."""
  options = tf.distribute.InputOptions(experimental_fetch_to_device=False)
  return strategy.distribute_datasets_from_function(
      replica_batches(input_fn, strategy.num_replicas_in_sync), options)


class TpuAdapter:
  """Trains a module's tables and dense model with TPUEmbedding on a
  TPUStrategy."""

  device = 'tpu'
  # (which ops train the step, why not the fused CPU op).
  kernels = (model_layout.TPU_KERNELS, '')

  def __init__(self, spec: EmbeddingSpec, module, ctx,
               strategy: tf.distribute.TPUStrategy,
               decay: Optional[LinearDecay] = None, fast_path: bool = True):
    replicas = strategy.num_replicas_in_sync
    if ctx.global_batch_size % replicas:
      raise ValueError(f'batch_size {ctx.global_batch_size} must be a '
                       f'multiple of the {replicas} TPU replicas')
    self.spec, self.module, self.ctx = spec, module, ctx
    self.strategy = strategy
    self.global_batch_size = ctx.global_batch_size
    with strategy.scope():
      # Read by the mid-level API's dynamic learning rate at every step.
      self.learning_rate_scale = tf.Variable(1.0, trainable=False)
      self.embedding = tf.tpu.experimental.embedding.TPUEmbedding(
          spec.build_feature_config(),
          spec.build_optimizer(self.learning_rate_scale))
      self.model = module.build_model(ctx)
      self.dense_optimizer = (module.build_dense_optimizer(ctx)
                              if self.model is not None else None)
    self._fast = (fast_path and self.model is None and
                  module.activation_gradients is not None)
    # train(iterator, steps, first_step) -> the steps' batch losses.
    self.train = training_loop.CompiledSteps(
        self._host_step, self.learning_rate_scale, decay or LinearDecay(0),
        user_code=module.declared('AUTOGRAPH', True))

  def build(self, element_spec):
    with self.strategy.scope():
      self.embedding.build(per_replica_input_shapes(
          element_spec[0], self.strategy.num_replicas_in_sync))
      if self.model is not None:
        dense_model.build(self.module, self.ctx, self.spec, element_spec,
                          self.model, self.dense_optimizer)

  # A step per call: the TPU's steps have no stacked form.
  most_steps_per_call = 1

  def iterator(self, input_fn: InputFn, stack: int = 1):
    """An iterator of per-replica batches of `input_fn`'s (ids, extras), its
    ids as TPUEmbedding takes them. `stack` must be 1 (most_steps_per_call)."""
    if stack != 1:
      raise ValueError(f'TPU adapter: one batch per step, got stack={stack}')
    return iter(distribute(self.strategy, lambda context: input_fn(
        context).map(lambda ids, extras: (tpu_features(ids), extras))))

  def _tpu_step(self, extras):
    activations = self.embedding.dequeue()
    if self._fast:
      loss, gradients = self.module.activation_gradients(activations,
                                                         self.ctx)
      self.embedding.apply_gradients(gradients)
      return loss
    dense = list(self.model.trainable_variables) if self.model else []
    with tf.GradientTape() as tape:
      tape.watch(activations)
      loss = self.module.loss(self.model, activations, extras, self.ctx, True)
    gradients, dense_gradients = tape.gradient(loss, (activations, dense))
    self.embedding.apply_gradients(gradients)
    if dense:
      self.dense_optimizer.apply_gradients(
          [(g, v) for g, v in zip(dense_gradients, dense) if g is not None])
    return loss

  def _host_step(self, batch):
    """Enqueues one batch, runs the TPU step; the global batch's loss."""
    ids, extras = batch
    self.embedding.enqueue(ids, training=True)
    loss = self.strategy.run(self._tpu_step, args=(extras,))
    return self.strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
