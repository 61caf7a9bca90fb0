"""What the local runner adds around each component's launch.

LocalDagRunner runs each node through TFX's portable `Launcher.launch()`;
wrapping it (and `Launcher._run_executor`, which creates the outputs, runs
the executor and on an exception deletes the outputs) gives:

* one progress line per component with exact timings, whatever the logging
  configuration, and which component is running when a run fails or stops;
* a refusal to write into, or let the launcher delete, an output folder that
  exists with files before the execution starts: it belongs to an execution
  the store does not know (store_guard.py), perhaps a pushed model.
"""

import os
import time
from typing import Dict, List, Optional, TextIO


class ReusedOutputError(RuntimeError):
  """An execution's output folder already holds another execution's files."""


def _foreign_outputs(execution_info) -> List[str]:
  """Output URIs of the execution that already hold files."""
  found = []
  for artifacts in execution_info.output_dict.values():
    for artifact in artifacts:
      uri = artifact.uri
      if getattr(artifact, 'is_external', False) or not uri:
        continue
      if (os.path.isdir(uri) and os.listdir(uri)) or (
          os.path.isfile(uri) and os.path.getsize(uri)):
        found.append(uri)
  return found


class Launches:
  """Within the block, LocalDagRunner's launches are wrapped (module
  docstring); `current` is the node being run, `done` those finished."""

  def __init__(self, out: TextIO, progress_line=None):
    self._out = out
    # The trainer's updating progress line (progress_line.ProgressLine), if
    # shown: ended before each component line.
    self._progress_line = progress_line
    self.timings: Dict[str, float] = {}
    self.done: List[str] = []
    self.current: Optional[str] = None
    self._originals = None

  def _line(self, node: str, text: str):
    if self._progress_line is not None:
      self._progress_line.end_line()
    print(f'  {node:<22} {text}', file=self._out, flush=True)

  def __enter__(self):
    from tfx.orchestration.portable import launcher
    launch, run_executor = launcher.Launcher.launch, (
        launcher.Launcher._run_executor)
    launches = self

    def wrapped_launch(launcher_self):
      node = launcher_self._pipeline_node.node_info.id
      launches.current = node
      launches._line(node, 'running ...')
      start = time.monotonic()
      try:
        result = launch(launcher_self)
      except BaseException:
        launches._line(node, f'FAILED after {time.monotonic() - start:.1f}s')
        raise
      launches.timings[node] = time.monotonic() - start
      launches.done.append(node)
      launches.current = None
      launches._line(node, f'done in {launches.timings[node]:.1f}s')
      return result

    def guarded_run_executor(launcher_self, execution_info):
      foreign = _foreign_outputs(execution_info)
      if foreign:
        raise ReusedOutputError(
            f'output folder {foreign[0]} already holds files of an execution '
            'ML Metadata does not know (was metadata.sqlite replaced?); '
            'refusing to write into or delete it: move it away or run with '
            'a new --home')
      return run_executor(launcher_self, execution_info)

    self._originals = (launch, run_executor)
    launcher.Launcher.launch = wrapped_launch
    launcher.Launcher._run_executor = guarded_run_executor
    return self

  def __exit__(self, *exc):
    from tfx.orchestration.portable import launcher
    launcher.Launcher.launch, launcher.Launcher._run_executor = (
        self._originals)
