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
