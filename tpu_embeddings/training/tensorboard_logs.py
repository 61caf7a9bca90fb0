"""The TensorBoard files of a training run (the `model_run` artifact).

    <model_run>/               hparams of the run (the trainer's settings)
    <model_run>/train/         loss every `summary_every` steps (mean batch
                               loss of those steps), examples_per_sec per call
      projector_config.pbtxt,  the projector's files (projector.py):
      metadata*.tsv, ...       skip-gram's exported table,
                               or every table of a module file, its
                               `projector_tokens` most frequent tokens
    <model_run>/eval/          what the model declares, at the start and
                               at every checkpoint: skip-gram's held-out
                               loss (tpu_embeddings.models.heldout), and
                               the METRICS of a module's eval_fn, scored
                               through its signatures (checkpoint_metrics)

    tensorboard --logdir <pipeline root>/EmbeddingTrainer

shows every run's curves, its hparams and its table in the projector. The
projector files sit in `train/`: the plugin looks for a checkpoint in a run
and in its parent, so files in the run's root would show up three times.

The training curve's points are written in batches (every WRITE_SECONDS or
WRITE_POINTS points, at each checkpoint and at the end): a write of one
point costs about what a write of hundreds does, and the file writer puts
them on disk only every two minutes anyway.
"""

import dataclasses
import time
from typing import Any, Dict, Optional, Sequence

import numpy as np
import tensorflow as tf
from absl import logging
from tensorboard.plugins.hparams import api as hp
from tensorboard.plugins.scalar import metadata as scalar_metadata

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.models import exported_table
from tpu_embeddings.models import heldout
from tpu_embeddings.models.skipgram_features import skipgram_tables
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import checkpoint_metrics
from tpu_embeddings.training import projector
from tpu_embeddings.training.config import TrainerConfig

TRAIN_SUBDIR = 'train'
EVAL_SUBDIR = 'eval'
METADATA_FILENAME = projector.METADATA_FILENAME
METRICS = (('train', 'loss'), ('eval', 'loss'), ('train', 'examples_per_sec'))


def hparams(config: TrainerConfig, spec: EmbeddingSpec,
            table: str = '') -> Dict[str, Any]:
  """The run's settings as hparams: the config, a table of the spec (default
  skip-gram's exported one) and the optimizer."""
  values = {k: v for k, v in dataclasses.asdict(config).items()
            if k != 'embedding_spec' and not isinstance(v, dict)}
  table = spec.table(table or skipgram_tables(spec)[0])
  values.update(dim=table.dim, vocabulary_size=table.vocabulary_size,
                optimizer=spec.optimizer.kind)
  for name, value in spec.optimizer.hyperparameters.items():
    if isinstance(value, (bool, int, float, str)):
      values[name] = value
  return values


def table_variable(embedding, table: str) -> tf.Variable:
  """The host copy of `table` (current on TPU right after a checkpoint save)."""
  return embedding._variables[table]['parameters']


def read_rows(variable, ids: np.ndarray) -> tf.Tensor:
  """Rows `ids` of a table variable, sharded (TPU) or not (CPU), as a host
  tensor: the held-out loss computes on it without a copy to NumPy and
  back."""
  with tf.device('/cpu:0'):
    return tf.nn.embedding_lookup(variable, tf.constant(ids, tf.int64))


class _Scalars:
  """A summary writer, and one tf.function call writing many points of a tag.

  Summary ops run eagerly cost about half a millisecond a point; the
  compiled function writes a call's points for a small part of that, after
  one trace that costs as much as some dozens of eager writes. A writer
  therefore writes point by point, eagerly, for its first `EAGER_WRITES`
  writes of at most `EAGER_POINTS` points each, and through the function
  after that (and for any larger write): a short run never traces, and a
  long run's curve stays a small part of its time. The function is the
  writer's own (a trace writes to the writer it saw).
  """
  EAGER_POINTS = 16
  EAGER_WRITES = 20

  def __init__(self, logdir: str):
    self.writer = tf.summary.create_file_writer(logdir)
    self._write = tf.function(self._points, input_signature=[
        tf.TensorSpec([], tf.string), tf.TensorSpec([None], tf.int64),
        tf.TensorSpec([None], tf.float32)])
    self._writes = 0

  # What tf.summary.scalar writes, without the loop's name scope in the tag.
  METADATA = scalar_metadata.create_summary_metadata(
      display_name=None, description=None).SerializeToString()

  @staticmethod
  def _points(tag, steps, values):
    for i in tf.range(tf.size(steps)):
      tf.summary.write(tag, values[i], step=steps[i],
                       metadata=_Scalars.METADATA)

  def write(self, tag: str, steps: Sequence[int], values: Sequence[float]):
    if not len(steps):
      return
    self._writes += 1
    with self.writer.as_default():
      if (len(steps) <= self.EAGER_POINTS and
          self._writes <= self.EAGER_WRITES):
        for step, value in zip(steps, values):
          tf.summary.write(tag, tf.constant(value, tf.float32),
                           step=int(step), metadata=self.METADATA)
      else:
        self._write(tf.constant(tag), tf.constant(steps, tf.int64),
                    tf.constant(values, tf.float32))


class RunLogs:
  """Writes a run's scalars, hparams and projector files."""
  WRITE_POINTS = 1000
  WRITE_SECONDS = 10.0

  def __init__(self, run_uri: str, config: TrainerConfig, spec: EmbeddingSpec,
               projected: Sequence[projector.Projected],
               eval_pairs: Optional[heldout.EvalPairs] = None,
               declared: Optional[checkpoint_metrics.CheckpointMetrics] = None):
    """`projected`: (table, vocabulary) of the tables the projector shows;
    `eval_pairs`: skip-gram's held-out sample (its first table scores it);
    `declared`: the module's declared metrics of each checkpoint."""
    self.run_uri = run_uri
    self.config = config
    self.spec = spec
    self.projected = list(projected)
    self.eval_pairs = eval_pairs
    self.declared = declared
    if eval_pairs is not None:
      self.table, self.output_table = skipgram_tables(spec)
    self._writers = {}
    self._pending = []
    # Train points not yet written: {tag: (steps, values)}.
    self._unwritten = {'loss': ([], []), 'examples_per_sec': ([], [])}
    self._written_at = time.monotonic()

  @classmethod
  def create(cls, run_uri: str, config: TrainerConfig, spec: EmbeddingSpec,
             vocabularies: vocabularies_lib.Vocabularies, module,
             eval_pairs: Optional[heldout.EvalPairs] = None,
             ctx=None, model_uri: str = '') -> 'RunLogs':
    """A module that declares `exported_table` projects that table, any
    other every table; `eval_pairs` (a `heldout_pairs` hook's held-out
    sample; None: no eval split, no held-out loss) are scored at each
    checkpoint, and a module that declares an evaluation (eval_fn) scores
    each checkpoint under `model_uri` with its `ctx`."""
    declared = checkpoint_metrics.CheckpointMetrics.of(module, ctx, model_uri)
    exported = exported_table.declared_table(module, spec)
    if exported is None:
      return cls(run_uri, config, spec, [
          (t.name, vocabularies[t.vocabulary]) for t in spec.tables],
                 declared=declared)
    if eval_pairs is None and module.hook(heldout.HELDOUT_PAIRS):
      logging.warning('EmbeddingTrainer: no held-out loss in TensorBoard: '
                      'the Examples have no eval split')
    elif eval_pairs is not None and not eval_pairs.targets.size:
      eval_pairs = None
    table, vocabulary = exported
    return cls(run_uri, config, spec, [(table, vocabularies[vocabulary])],
               eval_pairs, declared)

  def _scalars(self, subdir: str = '') -> _Scalars:
    if subdir not in self._writers:
      self._writers[subdir] = _Scalars(
          model_layout.join(self.run_uri, subdir) if subdir else self.run_uri)
    return self._writers[subdir]

  def start(self, step: int, embedding):
    """hparams of the run, and the held-out loss before training."""
    with self._scalars().writer.as_default():
      hp.hparams_config(
          hparams=[hp.HParam(name) for name in sorted(
              hparams(self.config, self.spec, self.projected[0][0]))],
          metrics=[hp.Metric(tag, group=group)
                   for group, tag in self.metric_tags()])
      hp.hparams(hparams(self.config, self.spec, self.projected[0][0]),
                 trial_id=self.run_uri.rstrip('/').rsplit('/', 1)[-1],
                 start_time_secs=time.time())
    self.evaluate(step, embedding)

  def train_steps(self, first_step: int, losses: np.ndarray,
                  examples_per_sec: float):
    """Batch losses of steps first_step+1.. : a point every summary_every."""
    every = self.config.summary_every
    for step, loss in enumerate(losses.tolist(), start=first_step + 1):
      self._pending.append(loss)
      if step % every == 0:
        self._loss_point(step)
    if losses.size:
      steps, rates = self._unwritten['examples_per_sec']
      steps.append(first_step + losses.size)
      rates.append(examples_per_sec)
    if (sum(len(steps) for steps, _ in self._unwritten.values()) >=
        self.WRITE_POINTS or
        time.monotonic() - self._written_at >= self.WRITE_SECONDS):
      self._write_train()

  def _loss_point(self, step: int):
    """Holds the mean of the pending batch losses as the point of `step`."""
    steps, means = self._unwritten['loss']
    steps.append(step)
    means.append(sum(self._pending) / len(self._pending))
    self._pending = []

  def _write_train(self):
    """Writes the train points held back, and empties the lists."""
    train = self._scalars(TRAIN_SUBDIR)
    for tag, (steps, values) in self._unwritten.items():
      train.write(tag, steps, values)
      del steps[:], values[:]
    self._written_at = time.monotonic()

  def metric_tags(self):
    """(group, tag) of every scalar: METRICS and the declared metrics."""
    declared = sorted(self.declared.module.metrics) if self.declared else []
    return list(METRICS) + [(EVAL_SUBDIR, name) for name in declared
                            if (EVAL_SUBDIR, name) not in METRICS]

  def evaluate(self, step: int, embedding) -> Dict[str, float]:
    """What the model declares of the current state, written under eval/:
    skip-gram's held-out loss of the current table (TPU: call right after a
    save), a module's METRICS of the latest checkpoint."""
    self._write_train()
    values = {}
    if self.eval_pairs is not None:
      inputs = table_variable(embedding, self.table)
      outputs = table_variable(embedding, self.output_table)
      loss = heldout.loss_of_rows(
          lambda ids: read_rows(inputs, ids), self.eval_pairs,
          None if outputs is inputs else lambda ids: read_rows(outputs, ids))
      if loss is not None:
        values['loss'] = loss
    if self.declared is not None:
      values.update(self.declared())
    for tag, value in sorted(values.items()):
      self._scalars(EVAL_SUBDIR).write(tag, [step], [value])
    return values

  def finish(self, step: int, embedding):
    """Last partial loss point, projector files, everything flushed."""
    if self._pending:
      self._loss_point(step)
    self._write_train()
    if self.config.projector_tokens:
      self.write_projector(embedding)
    if self.declared is not None:
      self.declared.close()
    for scalars in self._writers.values():
      scalars.writer.flush()

  def write_projector(self, embedding):
    """The projected tables' most frequent rows, labelled by token."""
    projector.write(
        model_layout.join(self.run_uri, TRAIN_SUBDIR), self.projected,
        self.config.projector_tokens,
        lambda table, ids: read_rows(table_variable(embedding, table), ids))
