"""Builds the skip-gram CPU ops before a benchmark times anything.

The trainer compiles its ops once per machine and TensorFlow version
(tpu_embeddings/kernels/library.py, about half a minute on 2 cores). A
benchmark that let a timed run do it would charge that one-time build to
whichever run came first: a median of two runs would carry half of it.
"""

import time


def build_first() -> bool:
  """Builds (or finds) the op library in this process; prints which path
  the trainer runs will take. True when the ops load."""
  from tpu_embeddings.kernels import library
  start = time.perf_counter()
  ops = library.load()
  state = ('ready' if ops else
           'unavailable (the trainer takes its TensorFlow path)')
  print(f'skip-gram CPU ops: {state} after '
        f'{time.perf_counter() - start:.1f} s, before any timing', flush=True)
  return ops is not None
