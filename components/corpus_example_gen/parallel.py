"""Byte ranges written by forked worker processes, for the in-process runner.

Beam's in-memory DirectRunner runs every range on one core. When the corpus is
big enough to pay back the start-up, the ranges are shared by one forked
process per available core instead: a fork of the already-imported executor
costs tens of milliseconds, where a spawned Beam worker costs seconds. Each
range is written by the same function either way, so the files are the same.
"""

import concurrent.futures
import multiprocessing
import os
from typing import Callable, List, Sequence, TypeVar

from components.corpus_example_gen import ranges as ranges_lib

# Below this many corpus bytes the ranges are written in this process: a
# pool's start-up (fork, first call) would cost more than the second core
# gives back.
MIN_PARALLEL_BYTES = 8 << 20

Element = TypeVar('Element')
_fn = None  # the function of this worker's pool, inherited through fork


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


def _init(fn):
  global _fn
  _fn = fn


def _call(element):
  return _fn(element)


def run(fn: Callable[[Element], object], elements: List[Element],
        workers: int, describe: Callable[[Element], str] = str) -> list:
  """`fn(element)` for every element, in order; in `workers` forked processes
  when more than 1.

  An exception raised by `fn` in a worker is raised here as it was, the other
  workers stopped; a worker that dies raises WorkerDied naming (with
  `describe`) the elements not done.
  """
  if workers <= 1:
    return [fn(e) for e in elements]
  pool = concurrent.futures.ProcessPoolExecutor(
      workers, mp_context=multiprocessing.get_context('fork'),
      initializer=_init, initargs=(fn,))
  futures = [pool.submit(_call, e) for e in elements]
  try:
    results = [f.result() for f in futures]
  except concurrent.futures.process.BrokenProcessPool as e:
    unfinished = [describe(el) for el, f in zip(elements, futures)
                  if f.cancelled() or not f.done() or f.exception()]
    _stop(pool, futures)
    raise WorkerDied(
        f'corpus ExampleGen: a worker process died while writing '
        f'{", ".join(dict.fromkeys(unfinished))} (killed or out of memory?); '
        'rerun, or give it more memory') from e
  except BaseException:
    _stop(pool, futures)
    raise
  pool.shutdown()
  return results


def _stop(pool, futures):
  """Stops `pool` now: workers may be mid-range, their files still temps."""
  for f in futures:
    f.cancel()
  for process in list((pool._processes or {}).values()):  # pylint: disable=protected-access
    process.terminate()
  pool.shutdown(wait=True, cancel_futures=True)
