"""One pipeline run at a time in a home: `<home>/.run.lock`.

Two runs into one home would each validate against the version served when
they started and then both push, the second judged against a version that
is no longer served. The local runner holds this lock from before it reads
what is served (the validator's cache key) until its pusher is done, so runs
in one home validate and push one after the other, each against its
predecessor's push. A run that has to wait says so in one line. `flock`:
the lock dies with its process, so a killed run never leaves it held.
"""

import fcntl
import os
from typing import Optional, TextIO

LOCK_FILENAME = '.run.lock'


class HomeLock:
  """Exclusive, blocking lock on `<home>/.run.lock`; `out` gets one line
  when another run holds it."""

  def __init__(self, home: str, out: TextIO):
    self.path = os.path.join(home, LOCK_FILENAME)
    self._out = out
    self._f: Optional[TextIO] = None

  def __enter__(self):
    f = open(self.path, 'a+')
    try:
      fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      f.seek(0)
      holder = f.read().strip() or 'unknown'
      print(f'waiting for another run in this home to finish (pid {holder}, '
            f'lock {self.path})', file=self._out, flush=True)
      try:
        fcntl.flock(f, fcntl.LOCK_EX)
      except BaseException:
        f.close()
        raise
    try:  # who holds it, for the line of a run that waits; not needed
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
