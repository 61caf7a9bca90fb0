"""One pipeline run at a time in a home: `<home>/.run.lock`.

Two runs into one home would each validate against the version served when
they started and then both push, the second judged against a version that
is no longer served. The local runner holds this lock from before it reads
what is served (the validator's cache key) until its pusher is done, so runs
in one home validate and push one after the other, each against its
predecessor's push. A run that has to wait says so in one line. `flock`:
the lock dies with its process, so a killed run never leaves it held.
`retrain`'s lock (`<home>/.retrain.lock`) is a `PidLock` too.
"""

import fcntl
import os
from typing import Callable, Optional, TextIO

LOCK_FILENAME = '.run.lock'
# Read of a held lock's file: a pid, never a whole file of other contents.
_PID_CHARS = 32


class PidLock:
  """Exclusive `flock` on a file that names its holder's pid.

  Args:
    path: the lock file, created if missing.
    on_held: called with the holder's pid (a string; 'unknown' when the file
      names none) when another process holds the lock: it raises to
      give up, or returns to wait for the lock.

  The pid is written for the message of the next process that finds the
  lock held; a file system that refuses the write (full, read-only) costs
  only that message.
  """

  def __init__(self, path: str, on_held: Callable[[str], None]):
    self.path = path
    self._on_held = on_held
    self._f: Optional[TextIO] = None

  def __enter__(self):
    f = open(self.path, 'a+')
    try:
      try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except BlockingIOError:
        f.seek(0)
        holder = f.read(_PID_CHARS).strip()
        self._on_held(holder if holder.isdigit() else 'unknown')
        fcntl.flock(f, fcntl.LOCK_EX)
    except BaseException:
      f.close()
      raise
    try:
      f.seek(0)
      f.truncate()
      f.write(str(os.getpid()))
      f.flush()
    except OSError:
      pass
    self._f = f
    return self

  def __exit__(self, *exc):
    if self._f:
      try:
        self._f.truncate(0)
      except OSError:
        pass
      fcntl.flock(self._f, fcntl.LOCK_UN)
      self._f.close()
      self._f = None


class HomeLock(PidLock):
  """Exclusive, blocking lock on `<home>/.run.lock`; `out` gets one line
  when another run holds it."""

  def __init__(self, home: str, out: TextIO):
    path = os.path.join(home, LOCK_FILENAME)

    def wait(holder: str):
      print(f'waiting for another run in this home to finish (pid {holder}, '
            f'lock {path})', file=out, flush=True)

    super().__init__(path, wait)
