"""Random table initializers that cost one table of memory, not three.

`tf.random_uniform_initializer` run eagerly keeps three table-sized tensors
alive at once (the [0, 1) draw, its scaled copy, the shifted result), and
with TensorFlow's oneDNN allocator that memory stays with the process: a
10M x 64 table took 7.7 GB to create. These initializers draw in one
compiled function, where the scale and the shift reuse the draw's buffer.

Each call draws its own seed eagerly (so it follows `tf.random.set_seed`,
and two tables get different values) and then the values statelessly from
it.
"""

import tensorflow as tf

_SEED_MAX = 2**31 - 1


def _seed() -> tf.Tensor:
  with tf.init_scope():
    return tf.random.uniform([2], maxval=_SEED_MAX, dtype=tf.int64)


@tf.function(autograph=False, reduce_retracing=True)
def _uniform(shape, seed, minval, maxval, dtype):
  return tf.random.stateless_uniform(shape, seed, minval, maxval, dtype)


@tf.function(autograph=False, reduce_retracing=True)
def _truncated_normal(shape, seed, stddev, dtype):
  return tf.random.stateless_truncated_normal(shape, seed, 0.0, stddev, dtype)


class Uniform:
  """Values uniform in [minval, maxval)."""

  def __init__(self, minval: float, maxval: float):
    self.minval, self.maxval = minval, maxval

  def __call__(self, shape, dtype=tf.float32, **unused_kwargs):
    dtype = tf.as_dtype(dtype)
    return _uniform(tf.constant(shape, tf.int64), _seed(),
                    tf.constant(self.minval, dtype),
                    tf.constant(self.maxval, dtype), dtype)


class TruncatedNormal:
  """Normal values of mean 0 and `stddev`, redrawn beyond two stddevs."""

  def __init__(self, stddev: float):
    self.stddev = stddev

  def __call__(self, shape, dtype=tf.float32, **unused_kwargs):
    dtype = tf.as_dtype(dtype)
    return _truncated_normal(tf.constant(shape, tf.int64), _seed(),
                             tf.constant(self.stddev, dtype), dtype)
