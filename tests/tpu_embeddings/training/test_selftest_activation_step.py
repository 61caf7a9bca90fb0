"""Activation gradients spread per id as the TPU spreads them: checked
against TensorFlow's own gradient of the serving lookup."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.spec.embedding_spec import FeatureSpec
from tpu_embeddings.spec.embedding_spec import TableSpec
from tpu_embeddings.spec.optimizer_spec import OptimizerSpec
from tpu_embeddings.training.selftest import activation_step

V, D = 7, 3


def _embedding(combiner, max_sequence_length=0):
  spec = EmbeddingSpec(
      tables=(TableSpec('t', D, vocabulary_size=V, combiner=combiner),),
      features=(FeatureSpec('f', 't',
                            max_sequence_length=max_sequence_length),),
      optimizer=OptimizerSpec('sgd', (('learning_rate', 0.1),)))
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  return embedding


def _dense_gradient(embedding, ids, upstream):
  """TensorFlow's gradient of <upstream, lookup(ids)> w.r.t. the table,
  as a dense [V, D] array."""
  table = embedding._variables['t']['parameters']
  with tf.GradientTape() as tape:
    activations = embedding.embedding_lookup({'f': ids})['f']
    loss = tf.reduce_sum(activations * upstream)
  return tf.convert_to_tensor(tape.gradient(loss, table)).numpy()


def _spread(rows, values):
  found = np.zeros([V, D])
  np.add.at(found, np.asarray(rows), np.asarray(values))
  return found


@pytest.mark.parametrize('combiner', ['mean', 'sum', 'sqrtn'])
def test_bags_follow_the_combiner(combiner):
  ids = tf.ragged.constant([[1, 2, 2], [5], [0, 6]], tf.int32)
  upstream = tf.constant(np.arange(9, dtype=np.float32).reshape(3, D) + 1)
  embedding = _embedding(combiner)
  rows, values = activation_step.id_gradients(ids, upstream, combiner, 0, D)
  np.testing.assert_allclose(_spread(rows, values),
                             _dense_gradient(embedding, ids, upstream),
                             rtol=1e-6)


def test_dense_ids_take_their_own_activations_gradient():
  ids = tf.constant([[1, 1], [3, 4]], tf.int32)
  upstream = tf.constant(np.arange(12, dtype=np.float32).reshape(2, 2, D))
  embedding = _embedding('mean')
  rows, values = activation_step.id_gradients(ids, upstream, 'mean', 0, D)
  np.testing.assert_allclose(_spread(rows, values),
                             _dense_gradient(embedding, ids, upstream))


def test_sequence_features_drop_positions_beyond_their_length():
  ids = tf.ragged.constant([[1, 2, 3], [4]], tf.int32)
  upstream = tf.constant(np.arange(12, dtype=np.float32).reshape(2, 2, D) + 1)
  embedding = _embedding('mean', max_sequence_length=2)
  rows, values = activation_step.id_gradients(ids, upstream, 'mean', 2, D)
  assert sorted(np.asarray(rows).tolist()) == [1, 2, 4]
  np.testing.assert_allclose(_spread(rows, values),
                             _dense_gradient(embedding, ids, upstream))
