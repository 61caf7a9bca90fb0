"""The learning rate over a run: word2vec's linear decay.

Skip-gram's nearest neighbours settle only once the steps shrink: with a
constant rate the last updates keep moving the rows as much as the first. The
scale falls linearly from 1 at step 0 to `FINAL_FRACTION` at the run's last
planned step (word2vec's min_alpha / alpha) and stays there.
"""

import tensorflow as tf

FINAL_FRACTION = 1e-4 / 0.025


class LinearDecay:
  """Learning-rate scale per step; `total_steps` 0 keeps it at 1."""

  def __init__(self, total_steps: int):
    if total_steps < 0:
      raise ValueError(f'learning rate decay: total_steps must be >= 0, got '
                       f'{total_steps}')
    self.total_steps = int(total_steps)

  def __call__(self, step) -> tf.Tensor:
    if not self.total_steps:
      return tf.constant(1.0)
    progress = tf.cast(step, tf.float32) / float(self.total_steps)
    return tf.maximum(1.0 - progress, FINAL_FRACTION)
