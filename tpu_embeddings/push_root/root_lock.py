"""One push at a time per push root, where the file system can lock.

`held(root)` holds an exclusive `flock` on `<root>/.push.lock` (a hidden
name, never a version) for a whole push: the check that the served version
is still the validated one (tpu_embeddings/push_root/served.py), the copy
and the renames. A second push (another home, a rollback) waits, then sees
the first one's version as served. The lock dies with its process, so a
killed push never leaves it held.

Object stores (gs://, s3://) have no lock: there `held` holds nothing. The
pusher still checks the served version before it copies and again just
before its last move, so a change is caught unless another push's last
move lands between that check and this push's (seconds). Keep one pipeline
per push root on them (Kubeflow: a recurring run's `max_concurrency` 1).
"""

import contextlib
import os
from typing import Iterator

from tpu_embeddings.core import file_system

LOCK_FILENAME = '.push.lock'


@contextlib.contextmanager
def held(root: str) -> Iterator[None]:
  """Holds the push root's lock (local disk); nothing on object stores."""
  if not file_system.is_local(root):
    yield
    return
  import fcntl
  path = file_system.local_path(file_system.join(root, LOCK_FILENAME))
  fd = os.open(path, os.O_CREAT | os.O_RDONLY, 0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield
  finally:
    os.close(fd)  # releases the lock
