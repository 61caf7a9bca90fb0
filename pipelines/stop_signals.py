"""SIGINT and SIGTERM as one exception, so that a stop unwinds like Ctrl-C.

Python turns SIGINT into KeyboardInterrupt; SIGTERM (`kill`, `docker stop`,
a Kubernetes pod being deleted or preempted) ends the process at once, with
no `finally` run. `install()` makes both raise `Stopped`, a
KeyboardInterrupt: cleanups run (a push removes its hidden folder, the
exporter its staging folders), TFX's launcher neither marks the execution
failed nor deletes its outputs (it handles `Exception` only), and the
entry point prints one line and exits 128 + the signal number (130 for
SIGINT, 143 for SIGTERM), as a shell reports a process a signal ended.

A second signal while the first unwinds ends the process at once (the
default action), for a user who does not want to wait for the cleanups.

A stop raised inside a finalizer (`__del__`, e.g. grpc's server) is
swallowed by Python, which prints "Exception ignored in". `install()` also
sets a hook that keeps that quiet and raises the stop again in the main
thread, so the run still stops, with its one line.
"""

import _thread
import signal
import sys
import threading
from typing import Iterator, Optional

HANDLED = (signal.SIGINT, signal.SIGTERM)
# The stop signals that arrived in this process, in order.
_RECEIVED = []


class Stopped(KeyboardInterrupt):
  """A stop signal arrived; `signum` says which."""

  def __init__(self, signum: int = signal.SIGINT):
    super().__init__(signal.Signals(signum).name)
    self.signum = signum


def _raise_stopped(signum, frame):
  del frame
  _RECEIVED.append(signum)
  for handled in HANDLED:
    signal.signal(handled, signal.SIG_DFL)
  raise Stopped(signum)


def _stop_again(unraisable) -> None:
  """`sys.unraisablehook`: a swallowed stop is raised again in the main
  thread; anything else is printed as Python does."""
  stop = unraisable.exc_value
  if not isinstance(stop, Stopped):
    sys.__unraisablehook__(unraisable)
    return
  _signal_main_thread(stop.signum)


def _signal_main_thread(signum: int) -> None:
  """Sends `signum` to the main thread again from another thread, so that
  it lands once the hook has returned (a blocking call returns too)."""
  signal.signal(signum, _raise_stopped_outside_hook)
  # The low-level start: `threading.Thread.start` waits for the thread,
  # and the signal would land inside that wait.
  _thread.start_new_thread(signal.pthread_kill,
                           (threading.main_thread().ident, signum))


def _raise_stopped_outside_hook(signum, frame):
  while frame is not None:
    if frame.f_code is _stop_again.__code__:
      _signal_main_thread(signum)  # still inside the hook: once more
      return
    frame = frame.f_back
  _raise_stopped(signum, None)


def install():
  """From the main thread: SIGINT and SIGTERM raise `Stopped`, and a stop
  swallowed by a finalizer is raised again."""
  for handled in HANDLED:
    signal.signal(handled, _raise_stopped)
  sys.unraisablehook = _stop_again


def error_chain(error: BaseException) -> Iterator[BaseException]:
  """`error`, then what it was raised from or while handling, and so on."""
  seen = set()
  while error is not None and id(error) not in seen:
    seen.add(id(error))
    yield error
    error = error.__cause__ or error.__context__


def signal_of(error: BaseException) -> Optional[int]:
  """The signal behind a KeyboardInterrupt (plain ones are SIGINT), or None.

  The stop may sit in the error's cause or context: raised inside a C
  callback, it can come out as another error (a SystemError) raised while
  it unwound. Raised inside a finalizer (`__del__`), it is swallowed and
  another error surfaces later: once a stop signal arrived, it is the
  answer whatever the error.
  """
  for e in error_chain(error):
    if isinstance(e, Stopped):
      return e.signum
    if isinstance(e, KeyboardInterrupt):
      return int(signal.SIGINT)
  return _RECEIVED[0] if _RECEIVED else None


def exit_code(signum: int) -> int:
  return 128 + int(signum)


def name(signum: int) -> str:
  return signal.Signals(signum).name
