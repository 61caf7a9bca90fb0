"""Container entrypoint of the Kubeflow tasks: TFX's executor, stopped cleanly.

    python -m pipelines.kubeflow.container --executor_class_path ... \
        --json_serialized_invocation_args '{{$}}' [beam args]

runs TFX's V2 executor entrypoint (kubeflow_v2_run_executor) with the same
arguments; the ExampleGen task's entrypoint (example_gen.py) runs through
`run` too. Kubernetes stops a pod (deleted, preempted, evicted) with SIGTERM
and, after the grace period, SIGKILL; Python's default is to die at once on
SIGTERM. Here SIGTERM and SIGINT unwind like Ctrl-C (pipelines/
stop_signals.py): cleanups run (a push removes its hidden version folder,
the exporter its staging folders), a trainer's checkpoints and resume record
stay for the rerun, and the task prints one line (the signal, the executor)
and exits 143 (SIGINT: 130).
"""

import importlib
import sys
from typing import Callable, List, Optional

from pipelines import stop_signals
from tpu_embeddings.core import import_gc

COMMAND = ('python', '-m', 'pipelines.kubeflow.container')


def _executor(argv: List[str]) -> str:
  """The executor class named in the arguments, for the one line."""
  for i, arg in enumerate(argv):
    if arg.startswith('--executor_class_path='):
      return arg.split('=', 1)[1]
    if arg == '--executor_class_path' and i + 1 < len(argv):
      return argv[i + 1]
  return 'the executor'


def run(entry: Callable[[List[str]], int], argv: List[str]) -> int:
  """`entry(argv)` with stop signals turned into one line and 128 + signal.
  """
  stop_signals.install()
  try:
    return entry(argv)
  except (KeyboardInterrupt, Exception) as e:
    # A stop landing inside C code can surface as another error (TensorFlow
    # reports one amid a tensor's creation as a TypeError about its eager
    # context): once a stop signal arrived, the task stopped.
    signum = stop_signals.signal_of(e)
    if signum is None:
      raise
    print(f'stopped by {stop_signals.name(signum)} in {_executor(argv)}; '
          'a rerun of the pipeline continues (finished tasks are cached, the '
          'trainer resumes from its newest checkpoint)', file=sys.stderr,
          flush=True)
    return stop_signals.exit_code(signum)


def import_entrypoint(executor_class_path: str):
  """TFX's V2 executor entrypoint module, imported as a task starts: with
  the executor's module (TensorFlow and the rest) and the collector paused
  (`import_gc`). A path that does not import is left for TFX to report."""
  with import_gc.paused():
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_run_executor
    try:
      importlib.import_module(executor_class_path.rsplit('.', 1)[0])
    except ImportError:
      pass
  return kubeflow_v2_run_executor


def run_executor(argv: List[str]) -> int:
  """TFX's V2 executor entrypoint, as its own `python -m` runs it."""
  from absl.flags import argparse_flags
  parser = argparse_flags.ArgumentParser(prog='python -m ' + COMMAND[-1])
  parser.add_argument('--executor_class_path', required=True)
  parser.add_argument('--json_serialized_invocation_args', required=True)
  parser.add_argument('--json_serialized_inputs_spec_args', default=None)
  args = parser.parse_known_args(argv)
  import_entrypoint(args[0].executor_class_path).main(args)
  return 0


def main(argv: Optional[List[str]] = None) -> int:
  return run(run_executor, sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
  sys.exit(main())
