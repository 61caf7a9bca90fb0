"""Transparent huge pages for glibc malloc: a setting read at process start.

TensorFlow allocates a multi-GB table as one fresh mmap'd chunk. With the
kernel's THP mode `madvise` (Debian's default) each 4 KiB page of it then
faults on its own, and restoring, exporting or loading a 10M x 64 table spends
more time in those faults than in copying. glibc >= 2.35 advises huge pages
for its chunks when a process starts with
`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`; an older glibc ignores the tunable.
"""

import os
import sys
from typing import List, Mapping

TUNABLE = 'glibc.malloc.hugetlb=1'
_VARIABLE = 'GLIBC_TUNABLES'


def environ(env: Mapping[str, str]) -> dict:
  """A copy of `env` whose GLIBC_TUNABLES asks for huge pages; a hugetlb
  value already there (the user's choice) is kept."""
  env = dict(env)
  current = env.get(_VARIABLE, '')
  if 'glibc.malloc.hugetlb=' not in current:
    env[_VARIABLE] = f'{current}:{TUNABLE}' if current else TUNABLE
  return env


def reexec_if_needed(argv: List[str]):
  """Restarts this interpreter with `argv` (its arguments after the
  executable) under `environ(os.environ)`, unless that changes nothing.
  Call before importing anything heavy."""
  env = environ(os.environ)
  if env.get(_VARIABLE) != os.environ.get(_VARIABLE):
    os.execve(sys.executable, [sys.executable] + list(argv), env)
