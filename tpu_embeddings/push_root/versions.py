"""Version numbers of a push root, reserved so that no two pushes share one.

A push reserves `<root>/.reserved/<n>` for a number above every number in use
(versions in any state, `.tmp-<n>-*` leftovers, reservations), so a number is
never given out twice nor reused. On local disk the reservation is created
exclusively and `flock`ed for the life of the push: the push is live exactly
while it runs. Object stores have neither: the reservation is written with a
token and read back, and counts as live for REMOTE_STALE_SECONDS.
"""

import contextlib
import errno
import os
import time
import uuid
from typing import Iterator, Optional

from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import layout as push_layout

# Prefix of the hidden directory a version is written in before its move.
TMP_PREFIX = '.tmp-'
# Reservations on object stores older than this belong to dead pushes.
REMOTE_STALE_SECONDS = 24 * 3600


def temp_name(number: int, token: str) -> str:
  return f'{TMP_PREFIX}{number}-{token}'


def temp_number(name: str) -> Optional[int]:
  """The version number in a `temp_name`, or None."""
  head = name[len(TMP_PREFIX):].split('-', 1)[0]
  return int(head) if name.startswith(TMP_PREFIX) and head.isdigit() else None


def _reservation(root: str, number: int) -> str:
  return file_system.join(root, push_layout.RESERVED_DIR, str(number))


def highest_number(root: str) -> int:
  """The highest number used so far: versions of any state and reservations."""
  numbers = [0]
  for kind in push_layout.KINDS:
    directory = push_layout.kind_dir(root, kind)
    if not file_system.isdir(directory):
      continue
    # Every name TF Serving reads as a version, in any state (a symlink or
    # `0099` too: the next version must be served above it).
    numbers.extend(push_layout.numbered_folders(root, kind))
    for name in file_system.listdir(directory):
      if temp_number(name):
        numbers.append(temp_number(name))
  reserved = file_system.join(root, push_layout.RESERVED_DIR)
  if file_system.isdir(reserved):
    numbers.extend(int(n) for n in file_system.listdir(reserved)
                   if n.isdigit())
  return max(numbers)


@contextlib.contextmanager
def reserve_version(root: str) -> Iterator[int]:
  """Yields a version number no other push has or will get."""
  file_system.makedirs(file_system.join(root, push_layout.RESERVED_DIR))
  number = highest_number(root) + 1
  if file_system.is_local(root):
    with _hold_first_free(root, number) as number:
      yield number
  else:
    yield _write_first_free(root, number)


@contextlib.contextmanager
def _hold_first_free(root: str, number: int) -> Iterator[int]:
  """Creates the first free reservation from `number` on and locks it."""
  import fcntl
  while True:
    path = file_system.local_path(_reservation(root, number))
    try:
      fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
      number += 1
      continue
    break
  try:
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield number
  finally:
    os.close(fd)  # Releases the lock; the file keeps the number used.


def _write_first_free(root: str, number: int) -> int:
  """Writes the first free reservation from `number` on that reads back."""
  token = uuid.uuid4().hex
  while True:
    path = _reservation(root, number)
    if not file_system.exists(path):
      file_system.write_text(path, token)
      time.sleep(0.2)  # Let a racing writer's object land before reading.
      with file_system.open_file(path) as f:
        if f.read() == token:
          return number
    number += 1


def is_live(root: str, number: int) -> bool:
  """True while the push that reserved `number` may still be running."""
  path = _reservation(root, number)
  if not file_system.is_local(root):
    return file_system.exists(path) and (
        time.time() - file_system.mtime(path) < REMOTE_STALE_SECONDS)
  import fcntl
  try:
    fd = os.open(file_system.local_path(path), os.O_RDONLY)
  except FileNotFoundError:
    return False
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  except OSError as e:
    if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
      return True
    raise
  finally:
    os.close(fd)
  return False


def prune_reservations(root: str, below: int):
  """Drops the reservations of ended pushes under `below`.

  `below` is a kept version, so the highest number in use is never dropped.
  """
  reserved = file_system.join(root, push_layout.RESERVED_DIR)
  if not file_system.isdir(reserved):
    return
  for name in file_system.listdir(reserved):
    if name.isdigit() and int(name) < below and not is_live(root, int(name)):
      file_system.remove(file_system.join(reserved, name))
