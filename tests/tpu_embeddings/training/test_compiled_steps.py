"""CompiledSteps: the steps run, their learning rates, the end of the data,
and autograph applied to user code only."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.training import training_loop


def numbers(n):
  return tf.data.Dataset.range(1, n + 1).map(lambda x: tf.cast(x, tf.float32))


class Recorder:
  """A step that adds its batch to a total and records the learning rate
  scale it saw."""

  def __init__(self):
    self.scale = tf.Variable(1.0)
    self.total = tf.Variable(0.0)
    self.scales = tf.Variable(tf.zeros([16]))
    self.calls = tf.Variable(0)

  def step(self, batch):
    self.scales.scatter_nd_update([[self.calls]], [self.scale])
    self.calls.assign_add(1)
    self.total.assign_add(batch)
    return batch * 10.0


def test_the_steps_run_in_order_with_each_steps_learning_rate():
  r = Recorder()
  train = training_loop.CompiledSteps(
      r.step, r.scale, lambda step: tf.cast(step, tf.float32) / 100.0,
      user_code=False)
  iterator = iter(numbers(10))
  np.testing.assert_allclose(train(iterator, 3, first_step=7), [10, 20, 30])
  np.testing.assert_allclose(train(iterator, 2, first_step=10), [40, 50])
  assert float(r.total) == 15.0
  np.testing.assert_allclose(r.scales.numpy()[:5],
                             [0.07, 0.08, 0.09, 0.10, 0.11], rtol=1e-6)


def test_a_call_past_the_end_of_the_data_returns_the_steps_it_ran():
  r = Recorder()
  train = training_loop.CompiledSteps(r.step, r.scale, lambda s: 1.0,
                                      user_code=False)
  iterator = iter(numbers(4))
  np.testing.assert_allclose(train(iterator, 3), [10, 20, 30])
  np.testing.assert_allclose(train(iterator, 3), [40])
  assert train(iterator, 3).size == 0
  assert int(r.calls) == 4


class Branching:
  """A module-like step that branches on a tensor in Python."""

  def __init__(self):
    self.scale = tf.Variable(1.0)

  def step(self, batch):
    if batch > 2.0:
      return batch
    return -batch


def test_user_code_is_converted_by_autograph():
  b = Branching()
  train = training_loop.CompiledSteps(b.step, b.scale, lambda s: 1.0)
  np.testing.assert_allclose(train(iter(numbers(4)), 4), [-1, -2, 3, 4])


def test_built_in_steps_are_not_converted():
  b = Branching()
  train = training_loop.CompiledSteps(b.step, b.scale, lambda s: 1.0,
                                      user_code=False)
  with pytest.raises(TypeError, match='bool'):
    train(iter(numbers(4)), 4)


class ReplicaBranching(Branching):
  """A host step that runs a branching replica function in `strategy.run`,
  as the TPU adapter runs a module's loss."""

  def __init__(self):
    super().__init__()
    self.strategy = tf.distribute.MirroredStrategy(['/cpu:0'])

  def host_step(self, batch):
    out = self.strategy.run(self.step, args=(batch,))
    return self.strategy.reduce(tf.distribute.ReduceOp.SUM, out, axis=None)


def test_user_code_run_by_a_strategy_is_converted_too():
  b = ReplicaBranching()
  train = training_loop.CompiledSteps(b.host_step, b.scale, lambda s: 1.0)
  np.testing.assert_allclose(train(iter(numbers(4)), 4), [-1, -2, 3, 4])
  built_in = training_loop.CompiledSteps(b.host_step, b.scale, lambda s: 1.0,
                                         user_code=False)
  with pytest.raises(TypeError, match='bool'):
    built_in(iter(numbers(4)), 4)
