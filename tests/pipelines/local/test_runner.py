"""The local runner's Beam options."""

from tfx.dsl.components.base import base_beam_executor

from components.vocabulary import executor as vocabulary_executor
from pipelines.local import runner as local_runner


def test_beam_components_start_without_packaging_tfx():
  """Any Beam option makes TFX build an sdist of itself for remote workers
  when a Beam executor starts (1-2 s); the in-process default needs none."""
  context = base_beam_executor.BaseBeamExecutor.Context(
      beam_pipeline_args=list(local_runner.BEAM_ARGS))
  executor = vocabulary_executor.Executor(context)
  assert not any(a.startswith('--extra_package')
                 for a in executor._beam_pipeline_args)


def test_verbose_shows_absl_info_logs_and_quiet_hides_them():
  import logging as py_logging

  from absl import logging

  from pipelines.local import runner
  seen = []
  handler = py_logging.Handler(py_logging.DEBUG)
  handler.emit = lambda record: seen.append(record.getMessage())
  py_logging.getLogger('absl').addHandler(handler)
  before = logging.get_verbosity()
  try:
    logging.set_verbosity(logging.WARNING)
    with runner._quiet_logs(True):
      logging.info('trainer step 100')
    with runner._quiet_logs(False):
      logging.info('hidden step')
    assert logging.get_verbosity() == logging.WARNING
  finally:
    py_logging.getLogger('absl').removeHandler(handler)
    logging.set_verbosity(before)
  assert seen == ['trainer step 100']


def _through_quiet_logs(raised: BaseException, tmp_path) -> bool:
  """Whether TensorFlow warns once `raised` left `_quiet_logs` while a
  checkpoint restore was cut short, as a stop inside the exporter's restore
  leaves it; that restore is deleted after the CLI's one line."""
  import gc
  import logging

  import tensorflow as tf
  from absl import logging as absl_logging
  handlers = logging.getLogger().handlers + [absl_logging.get_absl_handler()]
  levels = [h.level for h in handlers]
  path = tf.train.Checkpoint(a=tf.Variable(1.), b=tf.Variable(2.)).write(
      str(tmp_path / 'ckpt'))
  tf_logger = logging.getLogger('tensorflow')
  level = tf_logger.level
  warned = []
  handler = logging.Handler(logging.WARNING)
  handler.emit = lambda record: warned.append(record.getMessage())
  tf_logger.addHandler(handler)
  try:
    try:
      with local_runner._quiet_logs(verbose=False):
        restored = tf.train.Checkpoint(a=tf.Variable(0.)).restore(path)
        raise raised
    except BaseException:
      pass
    del restored
    gc.collect()
    return any('could not be found' in m for m in warned)
  finally:
    tf_logger.removeHandler(handler)
    tf_logger.setLevel(level)
    for h, was in zip(handlers, levels):  # a stop leaves them quiet
      h.setLevel(was)


def test_a_stop_leaves_the_logs_quiet_as_the_run_unwinds(tmp_path):
  assert not _through_quiet_logs(KeyboardInterrupt(), tmp_path)


def test_an_error_gives_the_logs_back(tmp_path):
  assert _through_quiet_logs(ValueError('a failed run'), tmp_path)
