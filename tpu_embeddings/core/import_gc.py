"""Python's cyclic garbage collector paused while a process imports its
libraries.

Importing TensorFlow, TFX and Beam creates about 580k objects that live as
long as the process. With the collector on, each full collection on the way
walks every one of them again, a large part of the import's CPU time
(`benchmarks/start_up_imports.py` measures it). Modules are not garbage,
so nothing is lost by not collecting while they import; once they are in,
`gc.freeze()` moves every object alive into the permanent generation, so
later collections walk only what the work creates.
"""

import contextlib
import gc
import sys
from typing import Callable


def pause() -> Callable[[], None]:
  """Turns the collector off; returns `resume`, which turns it back on if it
  was on. When modules were imported in between, `resume` first freezes
  what is alive. When none were (a test calling the CLI in-process, with
  everything imported already), it freezes nothing: a process that enters
  again never freezes the garbage of its work since. Calls after the first
  do nothing."""
  was_enabled = gc.isenabled()
  modules = len(sys.modules)
  gc.disable()
  resumed = []

  def resume():
    if resumed:  # once only
      return
    resumed.append(True)
    if len(sys.modules) > modules:
      gc.freeze()
    if was_enabled:
      gc.enable()
  return resume


@contextlib.contextmanager
def paused():
  """Runs the block (imports) between `pause` and its `resume`."""
  resume = pause()
  try:
    yield
  finally:
    resume()
