"""The CPU adapter with the TPU adapter's gradient flow, for module models.

The CPU adapter's generic step differentiates the loss w.r.t. the table
variables: TensorFlow's lookup gradient spreads each activation's gradient
over the ids it combined. On a TPU, `TPUEmbedding.apply_gradients` takes the
gradients w.r.t. the activations, and the TPU spreads them itself. This
adapter does what the TPU does, by hand, on CPU: the loss's gradients w.r.t.
the activations (a tape watching them), spread per id by the table's
combiner, duplicate ids summed, the embedding optimizer's rule once per id.

    dense ids [B, ...]            each id gets its activation's gradient
    ragged ids [B, None], mean    each id of bag b gets g_b / n_b
                          sum     g_b
                          sqrtn   g_b / sqrt(n_b)
    ragged, max_sequence_length   the id at position p < L gets g[b, p]

Agreement with the generic step checks the gradient flow the TPU trainer
relies on, wherever no TPU is reachable.
"""

import tensorflow as tf

from tpu_embeddings.training import cpu_adapter
from tpu_embeddings.training import embedding_optimizers


def _bag_weights(ids: tf.RaggedTensor, combiner: str) -> tf.Tensor:
  """The weight of each id of `ids.flat_values` in its bag's activation."""
  lengths = tf.cast(ids.row_lengths(), tf.float32)
  per_bag = {'mean': 1.0 / tf.maximum(lengths, 1.0),
             'sum': tf.ones_like(lengths),
             'sqrtn': tf.math.rsqrt(tf.maximum(lengths, 1.0))}[combiner]
  return tf.gather(per_bag, ids.value_rowids())


def id_gradients(ids, gradient: tf.Tensor, combiner: str,
                 max_sequence_length: int, dim: int):
  """(ids [N], gradients [N, dim]) of one feature from its activations'
  gradient, as the TPU spreads it."""
  if not isinstance(ids, tf.RaggedTensor):
    return tf.reshape(ids, [-1]), tf.reshape(gradient, [-1, dim])
  rows = ids.value_rowids()
  if max_sequence_length:
    positions = tf.range(tf.size(ids.flat_values, tf.int64)) - tf.gather(
        ids.row_starts(), rows)
    kept = positions < max_sequence_length
    at = tf.stack([tf.boolean_mask(rows, kept),
                   tf.boolean_mask(positions, kept)], 1)
    return (tf.boolean_mask(ids.flat_values, kept),
            tf.gather_nd(gradient, at))
  weights = _bag_weights(ids, combiner)
  return ids.flat_values, tf.gather(gradient, rows) * weights[:, None]


class ActivationGradientAdapter(cpu_adapter.CpuAdapter):
  """`CpuAdapter` whose generic step applies the tables' gradients from
  the activations' gradients, as the TPU adapter does."""

  def tape_step(self, batch) -> tf.Tensor:
    ids, extras = batch
    dense = list(self.model.trainable_variables) if self.model else []
    activations = self.embedding.embedding_lookup(ids)
    with tf.GradientTape() as tape:
      tape.watch(activations)
      loss = self.module.loss(self.model, activations, extras, self.ctx, True)
    gradients, dense_gradients = tape.gradient(loss, (activations, dense))
    features = {f.name: f for f in self.spec.features}
    for table in sorted(self._features_of_table):
      spec = self.spec.table(table)
      rows = [tf.zeros([0], tf.int32)]
      values = [tf.zeros([0, spec.dim])]
      for name in self._features_of_table[table]:
        if gradients[name] is None:  # the loss did not read this feature
          continue
        found = id_gradients(ids[name], gradients[name], spec.combiner,
                             features[name].max_sequence_length, spec.dim)
        rows.append(tf.cast(found[0], tf.int32))
        values.append(found[1])
      embedding_optimizers.apply_sparse(
          self._rules[table], self.variables[table], tf.concat(rows, 0),
          tf.concat(values, 0))
    if dense:
      self.dense_optimizer.apply_gradients(
          [(g, v) for g, v in zip(dense_gradients, dense) if g is not None])
    return loss
