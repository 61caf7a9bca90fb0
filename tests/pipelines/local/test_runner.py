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
                 for a in executor._beam_pipeline_args)  # pylint: disable=protected-access
