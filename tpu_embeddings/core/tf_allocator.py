"""Giving freed memory back to the system: TensorFlow's oneDNN allocator,
told to at process start, and glibc's heap, on request.

With oneDNN on (TensorFlow's default on x86), every tensor of 4 KiB or more
comes from a pool that never shrinks, so a process that released a table
still holds its memory. The exporter writes both exports, releases the
table, and then loads each export to check it: with the pool, the
exporting process would still hold the released copy while the check loads
another. `TF_ONEDNN_USE_SYSTEM_ALLOCATOR=true` takes those tensors from
malloc instead, which returns them. It made the trainer's steps about 15%
slower here (pairs/s over 4 alternating runs of 2M tokens), so only the
exporter's Kubeflow task and its load-check processes set it.

Freed memory that malloc keeps in its heap (blocks under its mmap
threshold, which grows up to 32 MB) stays resident too; `release` returns
it (glibc's `malloc_trim`) before a phase that needs it elsewhere.
"""

import ctypes
import gc
from typing import Mapping

VARIABLE = 'TF_ONEDNN_USE_SYSTEM_ALLOCATOR'


def environ(env: Mapping[str, str]) -> dict:
  """A copy of `env` that returns freed tensor memory; a value already
  there (the user's choice) is kept."""
  env = dict(env)
  env.setdefault(VARIABLE, 'true')
  return env


def release():
  """Collects garbage and returns the heap's free pages to the system
  (glibc; a no-op elsewhere)."""
  gc.collect()
  try:
    ctypes.CDLL(None).malloc_trim(0)
  except (OSError, AttributeError):
    pass
