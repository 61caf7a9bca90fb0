"""The end of a CLI process, without the interpreter's teardown.

Once a command that loaded TensorFlow, TFX and Beam is done, the interpreter
would still free every module and object one by one before the process
ends: ~2 s after the last line of a demo `run` on a busy 2-core machine.
`end(code)` keeps what an exit must do and skips the rest.
"""

import atexit
import os
import sys
import threading


def _other_threads_running() -> bool:
  """Whether a non-daemon thread besides this one runs (the interpreter
  would wait for it)."""
  return any(t is not threading.current_thread() and not t.daemon
             and t.is_alive() for t in threading.enumerate())


def end(code: int) -> int:
  """Ends the process with exit status `code`: the exit handlers run
  (`atexit`: logging's flush, temporary folders, multiprocessing's
  children), stdout and stderr are flushed, and no module is torn down.

  With another non-daemon thread running, returns `code` instead, for
  `sys.exit(code)`: the interpreter then waits for that thread as usual.
  """
  if _other_threads_running():
    return code
  atexit._run_exitfuncs()
  for stream in (sys.stdout, sys.stderr):
    try:
      if stream is not None:
        stream.flush()
    except (OSError, ValueError):  # a closed pipe or stream: nothing to add
      pass
  os._exit(code)
