"""Byte ranges written by forked worker processes, for the in-process runner.

Beam's in-memory DirectRunner runs every range on one core. When the corpus is
big enough to pay back the start-up, this process and forks of it (one per
other available core) share the ranges instead, each taking the next one
left: a fork of the already-imported executor costs tens of milliseconds,
where a spawned Beam worker costs seconds. Each range is written by the same
function either way, so the files are the same.
"""

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import re
import sys
import tempfile
from typing import Callable, List, Sequence, TypeVar

from components.corpus_example_gen import ranges as ranges_lib

# Below this many corpus bytes the ranges are written in this process: a
# pool's start-up (fork, first call) would cost more than the second core
# gives back.
MIN_PARALLEL_BYTES = 8 << 20

Element = TypeVar('Element')
_MISSING = object()


class WorkerDied(RuntimeError):
  """A worker process ended without reporting (killed, out of memory)."""


def cores() -> int:
  """The cores this process may run on."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # not Linux
    return os.cpu_count() or 1


def workers_for(ranges: Sequence[ranges_lib.Range]) -> int:
  """How many processes should write `ranges` (1: this one)."""
  size = sum(end - start for _, start, end in ranges)
  if size < MIN_PARALLEL_BYTES:
    return 1
  return max(1, min(cores(), len(ranges)))


def _take(next_index, count: int):
  """The indices this process takes, one at a time, until none is left."""
  while True:
    with next_index.get_lock():
      index = next_index.value
      if index >= count:
        return
      next_index.value = index + 1
    yield index


# What gRPC (TFX runs an execution watcher server beside each executor)
# prints to stderr on every fork: its threads are busy, the child never
# calls it.
_FORK_NOISE = re.compile(
    rb'skipping fork\(\) handlers|before absl::InitializeLog\(\) is called')


@contextlib.contextmanager
def _forking_quietly():
  """Drops gRPC's fork lines from stderr (fd 2) within the block; yields a
  copy of the real stderr for children to restore."""
  sys.stderr.flush()
  saved = os.dup(2)
  try:
    with tempfile.TemporaryFile() as capture:
      os.dup2(capture.fileno(), 2)
      try:
        yield saved
      finally:
        os.dup2(saved, 2)
        capture.seek(0)
        for line in capture:
          if not _FORK_NOISE.search(line):
            os.write(2, line)
  finally:
    os.close(saved)


def _child(fn, elements, next_index, conn, stderr):
  """A worker: takes elements and sends ('start', i), ('done', i, result),
  or ('error', i, exception) for the first that fails."""
  os.dup2(stderr, 2)
  index = None
  try:
    for index in _take(next_index, len(elements)):
      conn.send(('start', index, None))
      conn.send(('done', index, fn(elements[index])))
  except BaseException as e:
    try:
      conn.send(('error', index, e))
    except Exception:
      conn.send(('error', index, RuntimeError(f'{type(e).__name__}: {e}')))
  finally:
    conn.close()


def run(fn: Callable[[Element], object], elements: List[Element],
        workers: int, describe: Callable[[Element], str] = str) -> list:
  """`fn(element)` for every element, results in order; shared by this
  process and `workers - 1` forked ones, each taking the next element left.

  An exception raised by `fn` in a worker is raised here as it was, the
  others stopped; a worker that dies raises WorkerDied naming (with
  `describe`) the element it was on.
  """
  if workers <= 1 or len(elements) <= 1:
    return [fn(e) for e in elements]
  context = multiprocessing.get_context('fork')
  next_index = context.Value('q', 0)
  results = [_MISSING] * len(elements)
  children = {}  # reader -> (process, index in progress)
  try:
    with _forking_quietly() as stderr:
      for _ in range(min(workers, len(elements)) - 1):
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(
            target=_child, daemon=True,
            args=(fn, elements, next_index, writer, stderr))
        process.start()
        writer.close()
        children[reader] = (process, None)
    for index in _take(next_index, len(elements)):
      results[index] = fn(elements[index])
      _receive(children, results, elements, describe, timeout=0)
    while children:
      _receive(children, results, elements, describe, timeout=None)
  except BaseException:
    with next_index.get_lock():
      next_index.value = len(elements)  # nobody starts another
    for process, _ in children.values():
      process.terminate()  # it may be mid-element: its files are temps
    raise
  finally:
    for reader, (process, _) in children.items():
      process.join()
      reader.close()
  missing = [describe(e) for e, r in zip(elements, results) if r is _MISSING]
  if missing:  # taken by a worker that died before it said so
    raise WorkerDied(f'corpus ExampleGen: a worker process died while '
                     f'writing {", ".join(dict.fromkeys(missing))}; rerun')
  return results


def _receive(children, results, elements, describe, timeout):
  """Handles the messages of children ready within `timeout`."""
  for reader in multiprocessing.connection.wait(list(children), timeout):
    process, index = children[reader]
    try:
      kind, index, value = reader.recv()
    except EOFError:  # finished, or died
      process.join()
      del children[reader]
      reader.close()
      if index is not None:
        raise WorkerDied(
            f'corpus ExampleGen: a worker process died (exit code '
            f'{process.exitcode}) while writing {describe(elements[index])}; '
            'rerun, or give it more memory') from None
      continue
    if kind == 'error':
      raise value
    if kind == 'done':
      results[index] = value
      index = None
    children[reader] = (process, index)
