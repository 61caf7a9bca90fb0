"""The skip-gram loss and its hand-derived gradients, per pair and shared."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.models import skipgram
from tpu_embeddings.models import skipgram_loss


def test_loss_and_gradients_match_autodiff():
  rng = np.random.default_rng(2)
  t = tf.constant(rng.normal(size=(6, 4)), tf.float32)
  c = tf.constant(rng.normal(size=(6, 4)), tf.float32)
  n = tf.constant(rng.normal(size=(6, 3, 4)), tf.float32)
  loss, grads = skipgram_loss.loss_and_gradients(t, c, n, global_batch_size=12)
  with tf.GradientTape() as tape:
    tape.watch([t, c, n])
    pos = tf.reduce_sum(t * c, -1)
    neg = tf.reduce_sum(t[:, None, :] * n, -1)
    reference = (tf.reduce_sum(
        tf.nn.sigmoid_cross_entropy_with_logits(tf.ones_like(pos), pos)) +
                 tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(
                     tf.zeros_like(neg), neg))) / 12
  dt, dc, dn = tape.gradient(reference, [t, c, n])
  np.testing.assert_allclose(loss.numpy(), reference.numpy(), rtol=1e-5)
  np.testing.assert_allclose(grads['target'], dt, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(grads['context'], dc, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(grads['negatives'], dn, rtol=1e-4, atol=1e-6)


def test_untrained_loss_is_the_loss_of_a_table_that_learned_nothing():
  config = skipgram.SkipGramConfig(negatives=7)
  batch, dim = 4, 3
  # Every logit is 0.
  loss, _ = skipgram_loss.loss_and_gradients(
      tf.zeros([batch, dim]), tf.zeros([batch, dim]),
      tf.zeros([batch, config.negatives, dim]), batch)
  assert config.untrained_loss() == pytest.approx(float(loss))



def _shared_reference(t, c, n, weight, global_batch_size):
  """The shared-negatives loss written pair by pair: pair b scores every
  row of its group's negatives, each term weighted."""
  groups = n.shape[0]
  per_group = t.shape[0] // groups
  total = 0.0
  for b in range(t.shape[0]):
    total += tf.nn.softplus(-tf.reduce_sum(t[b] * c[b]))
    scores = tf.linalg.matvec(n[b // per_group], t[b])
    total += weight * tf.reduce_sum(tf.nn.softplus(scores))
  return total / global_batch_size


@pytest.mark.parametrize('groups', [1, 2, 8])
def test_shared_negatives_match_autodiff_of_the_pairwise_loss(groups):
  rng = np.random.default_rng(3)
  t = tf.constant(rng.normal(size=(8, 4)), tf.float32)
  c = tf.constant(rng.normal(size=(8, 4)), tf.float32)
  n = tf.constant(rng.normal(size=(groups, 6, 4)), tf.float32)
  loss, grads = skipgram_loss.loss_and_gradients(t, c, n, 16,
                                                 negative_weight=0.5)
  with tf.GradientTape() as tape:
    tape.watch([t, c, n])
    reference = _shared_reference(t, c, n, 0.5, 16)
  dt, dc, dn = tape.gradient(reference, [t, c, n])
  np.testing.assert_allclose(loss.numpy(), reference.numpy(), rtol=1e-5)
  np.testing.assert_allclose(grads['target'], dt, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(grads['context'], dc, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(grads['negatives'], dn, rtol=1e-4, atol=1e-6)
  autodiff = skipgram_loss.loss(t, c, n, 16, negative_weight=0.5)
  np.testing.assert_allclose(autodiff.numpy(), reference.numpy(), rtol=1e-5)


def test_shared_untrained_loss_keeps_the_scale_of_k_negatives():
  config = skipgram.SkipGramConfig(negatives=5, shared_negatives=20,
                                   negative_group=4, batch_size=8)
  loss, _ = skipgram_loss.loss_and_gradients(
      tf.zeros([8, 3]), tf.zeros([8, 3]),
      tf.zeros([config.negative_groups, config.shared_negatives, 3]), 8,
      config.negative_weight)
  assert config.untrained_loss() == pytest.approx(float(loss))


def test_negatives_that_do_not_divide_the_batch_are_refused():
  with pytest.raises(ValueError, match='do not divide the batch of 8'):
    skipgram_loss.loss(tf.zeros([8, 3]), tf.zeros([8, 3]),
                       tf.zeros([3, 2, 3]), 8)


@pytest.mark.parametrize('batch, group, groups', [
    (2048, 64, 32), (100, 64, 2), (8, 64, 1), (101, 64, 101), (96, 64, 2)])
def test_a_batch_holds_whole_groups_of_at_most_negative_group(batch, group,
                                                              groups):
  config = skipgram.SkipGramConfig(batch_size=batch, shared_negatives=8,
                                   negative_group=group)
  config.validate()
  assert config.negative_groups == groups
  assert config.group_size * groups == batch


def test_per_pair_negatives_make_a_row_per_pair():
  assert skipgram.SkipGramConfig(batch_size=100,
                                 shared_negatives=0).negative_groups == 100
