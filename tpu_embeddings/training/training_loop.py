"""The training loop shared by the CPU and TPU adapters.

Restores the latest checkpoint of the output model if there is one (a rerun
after a kill resumes; the pipeline skips the batches already trained on, so
the data continues exactly), then trains in calls of up to `log_every`
steps (an adapter whose step takes stacks of batches, the CPU's fused op,
gets them `stacked_steps.steps_per_call` at a time), writes a progress line
per call and TensorBoard files
(`tensorboard_logs`: the loss every `summary_every` steps from the per-step
losses a call returns, the held-out loss at every checkpoint, the projector
files at the end), and saves a checkpoint every `checkpoint_every` steps, once
`checkpoint_seconds` have passed since the last save, and at the end.
"""

import dataclasses
import math
import time
from typing import Any, Dict, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from tpu_embeddings.core.input_pipelines import InputFn
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import checkpoints
from tpu_embeddings.training import stacked_steps
from tpu_embeddings.training.config import LoopConfig
from tpu_embeddings.training.tensorboard_logs import RunLogs

# The attribute of a progress log record holding its fields.
PROGRESS_RECORD = 'trainer_progress'


def run_steps(iterator, steps, step_fn, first_step=0, before_step=None):
  """Calls `step_fn(batch) -> loss` up to `steps` times, inside a tf.function.

  `before_step(global_step)`, if given, runs before each step (it sets the
  step's learning rate). Stops early when the data ends. Returns the losses
  of the steps run, [done].

  Written as an explicit `tf.while_loop`, so that it traces without
  autograph (whose conversion a fresh process pays on its first call).
  """
  steps = tf.cast(steps, tf.int32)
  first_step = tf.cast(first_step, tf.int64)

  def one_step(done, losses, _):
    batch = iterator.get_next_as_optional()

    def train():
      if before_step is not None:
        before_step(first_step + tf.cast(done, tf.int64))
      return done + 1, losses.write(done, step_fn(batch.get_value())), True

    return tf.cond(batch.has_value(), train, lambda: (done, losses, False))

  _, losses, _ = tf.while_loop(
      lambda done, _, more: more & (done < steps), one_step,
      (tf.constant(0), tf.TensorArray(tf.float32, size=0, dynamic_size=True),
       tf.constant(True)))
  return losses.stack()


def autograph_converted(step_fn):
  """`step_fn` with autograph applied to it and what it calls (a user
  module's loss may branch on tensors in Python); `run_steps` itself is not
  converted."""
  def call(batch):
    return step_fn(batch)
  return tf.autograph.to_graph(call)


class CompiledSteps:
  """An adapter's `train`: `run_steps` of its `step_fn` in one tf.function,
  each step's learning-rate scale set from `decay` at its global step.

  `stacked`: `step_fn(stack, scales) -> losses` takes the batches of
  several steps at once, and the iterator gives stacks of batches
  (`stacked_steps.run_stacks`): an adapter's `train_stacked`.
  `user_code`: the step runs a module's own functions, converted by
  autograph; built-in steps (every stacked one) are plain graph code and
  skip the conversion.
  """

  def __init__(self, step_fn, learning_rate_scale: tf.Variable, decay,
               user_code: bool = True, stacked: bool = False):
    self._step_fn = (autograph_converted(step_fn)
                     if user_code and not stacked else step_fn)
    self._scale = learning_rate_scale
    self._decay = decay
    self._stacked = stacked
    self._run = tf.function(self._run_steps, autograph=False)

  def _set_learning_rate(self, step):
    self._scale.assign(self._decay(step))

  def _run_steps(self, iterator, steps, first_step):
    if self._stacked:
      return stacked_steps.run_stacks(iterator, steps, self._step_fn,
                                      first_step, self._decay,
                                      self._scale.assign)
    return run_steps(iterator, steps, self._step_fn, first_step,
                     self._set_learning_rate)

  def __call__(self, iterator, steps: int, first_step: int = 0) -> np.ndarray:
    """Runs up to `steps` steps from global step `first_step`; their batch
    losses (fewer steps if the data ends)."""
    return self._run(iterator, tf.constant(steps, tf.int64),
                     tf.constant(first_step, tf.int64)).numpy()


@dataclasses.dataclass(frozen=True)
class LoopResult:
  steps: int
  examples_seen: int
  final_loss: Optional[float]  # None: the loss was NaN or Inf
  start_step: int
  steps_this_run: int
  seconds: float
  examples_per_sec: float
  checkpoint: str


def _steps_in_next_call(step: int, config: LoopConfig) -> int:
  """Steps up to the next progress line, checkpoint or end, whichever is
  first."""
  n = config.log_every - step % config.log_every
  if config.checkpoint_every:
    n = min(n, config.checkpoint_every - step % config.checkpoint_every)
  if config.train_steps:
    n = min(n, config.train_steps - step)
  return n


def progress(step: int, config: LoopConfig, loss: float, rate: float,
             expected_steps: int, seconds_per_step: float) -> Dict[str, Any]:
  """The fields of a progress line: step of total, epoch (estimated from the
  expected steps of `epochs` passes), loss, examples/s, seconds left."""
  total = config.train_steps or expected_steps
  fields = {'step': step, 'total_steps': total or None, 'loss': loss,
            'examples_per_sec': rate, 'epoch': None, 'epochs': None,
            'eta_seconds': None}
  if config.passes and expected_steps:
    fields['epochs'] = config.passes
    per_epoch = expected_steps / config.passes
    fields['epoch'] = min(config.passes, int(step // per_epoch) + 1)
  if total:
    fields['eta_seconds'] = max(0.0, (total - step) * seconds_per_step)
  return fields


def _log_progress(fields: Dict[str, Any]):
  """One progress line in the logs; `extra` carries its fields for a live
  display (the local CLI's)."""
  total = f'/{fields["total_steps"]}' if fields['total_steps'] else ''
  epoch = (f' (epoch {fields["epoch"]}/{fields["epochs"]})'
           if fields['epoch'] else '')
  eta = ('' if fields['eta_seconds'] is None else
         f'  ETA {fields["eta_seconds"]:.0f}s')
  logging.info('step %d%s%s  loss %.4f  %.0f examples/s%s', fields['step'],
               total, epoch, fields['loss'], fields['examples_per_sec'], eta,
               extra={PROGRESS_RECORD: fields})


def _restore_latest(adapter, spec: EmbeddingSpec, element_spec,
                    model_uri: str, config: LoopConfig):
  """(the checkpoint state, its latest checkpoint or None), restored."""
  adapter.build(element_spec)
  state = checkpoints.create(adapter.embedding, model_uri, adapter.model,
                             adapter.dense_optimizer)
  latest = state.manager.latest_checkpoint
  if latest:
    checkpoints.restore(state, spec, latest, adapter.model,
                        adapter.dense_optimizer)
    logging.info('Resuming from %s (step %d)', latest, int(state.step))
  if config.train_steps and int(state.step) >= config.train_steps:
    logging.info('Checkpoint step %d already reaches train_steps=%d; nothing '
                 'to train', int(state.step), config.train_steps)
  return state, latest


def _checkpoint_due(config: LoopConfig, step: int, saved_at: float) -> bool:
  """Every `checkpoint_every` steps or `checkpoint_seconds` seconds."""
  return bool(
      config.checkpoint_every and step % config.checkpoint_every == 0 or
      config.checkpoint_seconds and
      time.perf_counter() - saved_at >= config.checkpoint_seconds)


def _skipped(input_fn: InputFn, steps: int) -> InputFn:
  """`input_fn` without each input pipeline's first `steps` batches."""
  if not steps:
    return input_fn
  return lambda context: input_fn(context).skip(steps)


def run(adapter, spec: EmbeddingSpec, input_fn: InputFn, element_spec,
        model_uri: str, logs: RunLogs, config: LoopConfig,
        expected_steps: int = 0) -> LoopResult:
  """Trains from the latest checkpoint of `model_uri` (or from scratch) on
  the batches of `input_fn` (the module's input of `config.passes` passes,
  built by each input pipeline from its InputContext; a resumed run skips
  the batches it trained on, and the data continues exactly).
  `element_spec`: the global batch's (model_inputs.element_spec).

  `expected_steps`: the steps `epochs` passes are expected to take (0:
  unknown), for the epoch and time left of the progress lines."""
  batch_size = adapter.global_batch_size
  state, latest = _restore_latest(adapter, spec, element_spec, model_uri,
                                  config)
  start_step = int(state.step)
  iterator, train = stacked_steps.iterator_and_train(
      adapter, _skipped(input_fn, start_step), config, start_step)
  logs.start(start_step, adapter.embedding)
  began = time.perf_counter()
  last_saved = start_step if latest else -1
  saved_at = began
  step = start_step
  while not config.train_steps or step < config.train_steps:
    n = _steps_in_next_call(step, config)
    tick = time.perf_counter()
    losses = train(iterator, n, step)
    seconds = time.perf_counter() - tick
    done = losses.size
    if done:
      loss = float(losses.mean())
      rate = done * batch_size / max(seconds, 1e-9)
      logs.train_steps(step, losses, rate)
      step += done
      state.step.assign(step)
      state.examples_seen.assign_add(done * batch_size)
      state.loss.assign(loss)
      if step % config.log_every == 0 or done < n:
        per_step = (time.perf_counter() - began) / (step - start_step)
        _log_progress(progress(step, config, loss, rate, expected_steps,
                               per_step))
      if _checkpoint_due(config, step, saved_at):
        state.manager.save(checkpoint_number=step)
        last_saved = step
        saved_at = time.perf_counter()
        logs.evaluate(step, adapter.embedding)
    if done < n:  # the data ran out (epochs done)
      break
  if last_saved != step:
    state.manager.save(checkpoint_number=step)
    logs.evaluate(step, adapter.embedding)
  logs.finish(step, adapter.embedding)
  seconds = time.perf_counter() - began
  trained = step - start_step
  final_loss = float(state.loss.numpy())
  return LoopResult(
      steps=step, examples_seen=int(state.examples_seen),
      final_loss=final_loss if math.isfinite(final_loss) else None,
      start_step=start_step, steps_this_run=trained, seconds=seconds,
      examples_per_sec=trained * batch_size / seconds if seconds else 0.0,
      checkpoint=state.manager.latest_checkpoint)
