"""The learning rate over a run: a short warm-up, then word2vec's linear
decay.

Skip-gram's nearest neighbours settle only once the steps shrink: with a
constant rate the last updates keep moving the rows as much as the first. The
scale falls linearly from 1 at step 0 to `FINAL_FRACTION` at the run's last
planned step (word2vec's min_alpha / alpha) and stays there.

Adagrad's first update moves a row by about the learning rate whatever its
gradient, as its accumulator starts near zero: at the rates that learn well
that throws frequent tokens' rows far out, and the loss needs many steps to
come back. So the scale first rises linearly over `WARMUP_FRACTION` of the
planned steps (at most `MAX_WARMUP_STEPS`), while the accumulators fill.
"""

import tensorflow as tf

FINAL_FRACTION = 1e-4 / 0.025
WARMUP_FRACTION = 0.05
MAX_WARMUP_STEPS = 1000


class LinearDecay:
  """Learning-rate scale per step; `total_steps` 0 keeps it at 1."""

  def __init__(self, total_steps: int):
    if total_steps < 0:
      raise ValueError(f'learning rate decay: total_steps must be >= 0, got '
                       f'{total_steps}')
    self.total_steps = int(total_steps)
    self.warmup_steps = min(MAX_WARMUP_STEPS,
                            int(WARMUP_FRACTION * self.total_steps))

  def __call__(self, step) -> tf.Tensor:
    if not self.total_steps:
      return tf.constant(1.0)
    step = tf.cast(step, tf.float32)
    decay = tf.maximum(1.0 - step / float(self.total_steps), FINAL_FRACTION)
    if not self.warmup_steps:
      return decay
    return tf.minimum(1.0, (step + 1.0) / float(self.warmup_steps + 1)) * decay
