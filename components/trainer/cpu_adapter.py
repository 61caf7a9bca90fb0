"""CPU adapter: `TPUEmbeddingForServing` lookups + the embedding optimizer's
rule.

The embedding object is built from the spec with the spec's optimizer, so the
mid-level API creates the slot variables itself (same names, same initial
values, same checkpoint keys as `TPUEmbedding`). Per step:

1. look the batch's ids up with the serving API (dense ids keep their shape:
   target [B] -> [B, D], negatives [B, K] -> [B, K, D]);
2. loss and gradients w.r.t. the activations from the shared core;
3. per table: the rows' gradients, duplicate ids summed, then the optimizer's
   own update rule on the parameters and their slots.
"""

import collections
from typing import Dict, List, Optional

import tensorflow as tf

from components.trainer import embedding_optimizers
from components.trainer import training_loop
from components.trainer.learning_rate import LinearDecay
from tpu_embeddings.models import skipgram
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


class CpuAdapter:
  """Trains the spec's tables on CPU, writing TPU-format checkpoints."""

  device = 'cpu'

  def __init__(self, spec: EmbeddingSpec, global_batch_size: int,
               decay: Optional[LinearDecay] = None):
    self.spec = spec
    self.global_batch_size = global_batch_size
    self.learning_rate_scale = tf.Variable(1.0, trainable=False)
    feature_config = spec.build_feature_config()
    self.embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
        feature_config, spec.build_optimizer(self.learning_rate_scale))
    # The mid-level API has attached the optimizer to every TableConfig.
    self._rules = {
        f.table.name: embedding_optimizers.rule_for(f.table.optimizer)
        for f in feature_config.values()
    }
    self._features_of_table: Dict[str, List[str]] = collections.defaultdict(
        list)
    for name, f in sorted(feature_config.items()):
      self._features_of_table[f.table.name].append(name)
    # train(iterator, steps, first_step) -> the steps' batch losses.
    self.train = training_loop.CompiledSteps(
        self.step, self.learning_rate_scale, decay or LinearDecay(0))

  def build(self):
    self.embedding.build()

  @property
  def variables(self) -> Dict[str, Dict[str, tf.Variable]]:
    """{table: {'parameters': table, <slot>: slot variable}}."""
    return self.embedding._variables  # pylint: disable=protected-access

  def iterator(self, dataset: tf.data.Dataset):
    return iter(dataset)

  def step(self, features: Dict[str, tf.Tensor]) -> tf.Tensor:
    """One training step on a batch; returns the batch's mean loss."""
    activations = self.embedding.embedding_lookup(features)
    loss, gradients = skipgram.loss_and_gradients(
        activations[TARGET_FEATURE], activations[CONTEXT_FEATURE],
        activations[NEGATIVES_FEATURE], self.global_batch_size)
    for table, names in self._features_of_table.items():
      dim = self.spec.table(table).dim
      ids = tf.concat([tf.reshape(features[n], [-1]) for n in names], 0)
      rows = tf.concat([tf.reshape(gradients[n], [-1, dim]) for n in names],
                       0)
      embedding_optimizers.apply_sparse(self._rules[table],
                                        self.variables[table], ids, rows)
    return loss
