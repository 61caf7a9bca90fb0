"""TPU adapter: `TPUEmbedding` under `TPUStrategy`, driven by the shared core.

Per step, on the host: `enqueue(features, training=True)`; on the TPU, in
`strategy.run`: `dequeue()` the activations, the shared loss and its
gradients w.r.t. the activations, `apply_gradients`. The TPU applies the
embedding optimizer itself (duplicate ids summed, one update per id).

TPUEmbedding reduces the last dimension of a rank >= 2 dense input and
rejects one whose last dimension is not 1, so `negatives` [B, K] is enqueued
as [B, K, 1]; the activations then have the shapes the CPU adapter sees:
target [B, D], context [B, D], negatives [B, K, D].
"""

from typing import Dict, Optional

import tensorflow as tf

from components.trainer import training_loop
from components.trainer.learning_rate import LinearDecay
from tpu_embeddings.models import skipgram
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


def tpu_features(batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
  """The shared core's batch as TPUEmbedding takes it (negatives [B, K, 1])."""
  features = dict(batch)
  features[NEGATIVES_FEATURE] = tf.expand_dims(batch[NEGATIVES_FEATURE], -1)
  return features


def per_replica_input_shapes(per_replica_batch_size: int,
                             negatives: int) -> Dict[str, tf.TensorShape]:
  """Input shapes of `tpu_features` per replica, for `TPUEmbedding.build`."""
  return {
      TARGET_FEATURE: tf.TensorShape([per_replica_batch_size]),
      CONTEXT_FEATURE: tf.TensorShape([per_replica_batch_size]),
      NEGATIVES_FEATURE: tf.TensorShape([per_replica_batch_size, negatives,
                                         1]),
  }


class TpuAdapter:
  """Trains the spec's tables with TPUEmbedding on a TPUStrategy."""

  device = 'tpu'

  def __init__(self, spec: EmbeddingSpec, global_batch_size: int,
               negatives: int, strategy: tf.distribute.TPUStrategy,
               decay: Optional[LinearDecay] = None):
    replicas = strategy.num_replicas_in_sync
    if global_batch_size % replicas:
      raise ValueError(f'batch_size {global_batch_size} must be a multiple of '
                       f'the {replicas} TPU replicas')
    self.spec = spec
    self.strategy = strategy
    self.global_batch_size = global_batch_size
    self.per_replica_batch_size = global_batch_size // replicas
    self.negatives = negatives
    with strategy.scope():
      # Read by the mid-level API's dynamic learning rate at every step.
      self.learning_rate_scale = tf.Variable(1.0, trainable=False)
      self.embedding = tf.tpu.experimental.embedding.TPUEmbedding(
          spec.build_feature_config(),
          spec.build_optimizer(self.learning_rate_scale))
    # train(iterator, steps, first_step) -> the steps' batch losses.
    self.train = training_loop.CompiledSteps(
        self._host_step, self.learning_rate_scale, decay or LinearDecay(0))

  def build(self):
    with self.strategy.scope():
      self.embedding.build(per_replica_input_shapes(
          self.per_replica_batch_size, self.negatives))

  def iterator(self, dataset: tf.data.Dataset):
    distributed = self.strategy.experimental_distribute_dataset(
        dataset.map(tpu_features),
        options=tf.distribute.InputOptions(experimental_fetch_to_device=False))
    return iter(distributed)

  def _tpu_step(self):
    activations = self.embedding.dequeue()
    loss, gradients = skipgram.loss_and_gradients(
        activations[TARGET_FEATURE], activations[CONTEXT_FEATURE],
        activations[NEGATIVES_FEATURE], self.global_batch_size)
    self.embedding.apply_gradients(gradients)
    return loss

  def _host_step(self, batch):
    """Enqueues one batch, runs the TPU step; the global batch's loss."""
    self.embedding.enqueue(batch, training=True)
    loss = self.strategy.run(self._tpu_step)
    return self.strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
