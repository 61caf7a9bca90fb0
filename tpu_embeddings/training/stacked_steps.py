"""Stacked steps: the batches of several consecutive steps in one call.

A step whose work is small (the fused skip-gram op at 512 pairs x 64 dims)
costs about as much again in the training loop's hand-offs: the iterator's
next element, the learning-rate update, the loss's write. An adapter whose
step takes a stack of batches (`CpuAdapter` with the fused op:
`FusedSkipGramStep.stacked`) gets its batches `steps_per_call` at a time and
runs each stack in one call, step s at its own learning-rate scale: the same
updates as one call per step. Stacks end where the loop's calls do (its
progress lines, checkpoints and last step), so a run logs, saves and
resumes at the same steps either way.
"""

import math

import tensorflow as tf

from tpu_embeddings.training.config import LoopConfig


def run_stacks(iterator, steps, stacked_fn, first_step, scales_of,
               set_scale):
  """`training_loop.run_steps` for an iterator of stacks: each element
  holds the batches of g >= 1 consecutive steps, and
  `stacked_fn(stack, scales) -> losses` runs them in one call, step s at
  learning-rate scale scales[s] (`scales_of(global_steps)`). Runs whole
  stacks while fewer than `steps` steps have run (stacks end on the
  boundaries `steps` falls on; see `steps_per_call`); `set_scale` leaves
  the last step's scale set, as `run_steps` does. Returns the losses of the
  steps run, [done]."""
  steps = tf.cast(steps, tf.int32)
  first_step = tf.cast(first_step, tf.int64)

  def one_stack(done, losses, _):
    stack = iterator.get_next_as_optional()

    def train():
      batches = stack.get_value()
      count = tf.shape(tf.nest.flatten(batches)[0])[0]
      # A constant schedule gives a scalar scale: one per step regardless.
      scales = tf.broadcast_to(scales_of(
          first_step + tf.cast(done + tf.range(count), tf.int64)), [count])
      stack_losses = stacked_fn(batches, scales)
      set_scale(scales[-1])
      return done + count, losses.write(losses.size(), stack_losses), True

    return tf.cond(stack.has_value(), train, lambda: (done, losses, False))

  _, losses, _ = tf.while_loop(
      lambda done, _, more: more & (done < steps), one_stack,
      (tf.constant(0), tf.TensorArray(tf.float32, size=0, dynamic_size=True,
                                      infer_shape=False,
                                      element_shape=tf.TensorShape([None])),
       tf.constant(True)))
  return losses.concat()


def steps_per_call(config: LoopConfig, start_step: int, most: int) -> int:
  """Steps a stacked step may run in one call: the largest count up to
  `most` that divides every step a call of the loop ends on (`log_every`,
  `checkpoint_every`, `train_steps`) and `start_step`, so stacks never
  straddle a progress line, a checkpoint or the end. 1: a call per step."""
  common = math.gcd(config.log_every, config.checkpoint_every,
                    config.train_steps, start_step)
  return max(n for n in range(1, max(1, most) + 1) if common % n == 0)


def iterator_and_train(adapter, input_fn, config: LoopConfig,
                       start_step: int):
  """(iterator, train) of a run from `start_step` on `input_fn`'s batches:
  stacks of `steps_per_call` batches and the adapter's `train_stacked`
  where the adapter takes stacks, else its batches and `train`."""
  stack = steps_per_call(config, start_step, adapter.most_steps_per_call)
  iterator = adapter.iterator(input_fn, stack)
  return iterator, adapter.train_stacked if stack > 1 else adapter.train
