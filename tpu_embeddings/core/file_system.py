"""File operations on local paths and on `tf.io.gfile` file systems.

A path is local when it has no scheme or the scheme `file://`; local paths use
`os` (no TensorFlow import), their writes are fsync'ed and `move_dir` is one
atomic `os.rename` followed by an fsync of the parent directory. Other paths
(gs://, ram://, ...) use `tf.io.gfile`: directories are name prefixes and
nothing is atomic, so `move_dir` copies file by file, the files named in
`last` last, then deletes the source.

`tf.io.gfile` rather than fsspec: it ships with TensorFlow, reads the same
paths as TF Serving and `tf.saved_model`, and no backend offers an atomic
directory rename on GCS.
"""

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import uuid
from typing import IO, List, Sequence, Tuple

_SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*://')
_LOCAL_SCHEME = 'file://'
_CHUNK = 1 << 20


def split_scheme(path: str) -> Tuple[str, str]:
  """`('gs://', 'bucket/x')` for 'gs://bucket/x'; `('', path)` without one."""
  match = _SCHEME.match(path)
  return (match.group(0), path[match.end():]) if match else ('', path)


def is_local(path: str) -> bool:
  return split_scheme(path)[0] in ('', _LOCAL_SCHEME)


def local_path(path: str) -> str:
  """`path` without `file://`, for `os` functions."""
  return path[len(_LOCAL_SCHEME):] if path.startswith(_LOCAL_SCHEME) else path


def join(*parts: str) -> str:
  return '/'.join([parts[0].rstrip('/')] + [p.strip('/') for p in parts[1:]])


def _gfile():
  import tensorflow as tf
  return tf.io.gfile


def exists(path: str) -> bool:
  if is_local(path):
    return os.path.exists(local_path(path))
  return _gfile().exists(path)


def isdir(path: str) -> bool:
  if is_local(path):
    return os.path.isdir(local_path(path))
  return _gfile().isdir(path)


def listdir(path: str) -> List[str]:
  """Entry names, without the trailing "/" object stores give directories."""
  if is_local(path):
    return os.listdir(local_path(path))
  return [name.rstrip('/') for name in _gfile().listdir(path)]


def makedirs(path: str):
  """Creates `path` and its parents; no error if it exists."""
  if is_local(path):
    os.makedirs(local_path(path), exist_ok=True)
  else:
    _gfile().makedirs(path)


def realpath(path: str) -> str:
  """Local paths with symlinks resolved; others (no symlinks) unchanged."""
  return os.path.realpath(local_path(path)) if is_local(path) else path


def open_file(path: str, mode: str = 'r') -> IO:
  if is_local(path):
    return open(local_path(path), mode)
  return _gfile().GFile(path, mode)


def mtime(path: str) -> float:
  """Seconds since the epoch at which `path` was last written."""
  if is_local(path):
    return os.stat(local_path(path)).st_mtime
  return _gfile().stat(path).mtime_nsec / 1e9


def remove(path: str):
  """Deletes file `path`; no error if it is already gone."""
  if is_local(path):
    with contextlib.suppress(FileNotFoundError):
      os.remove(local_path(path))
    return
  gfile = _gfile()
  if gfile.exists(path):
    gfile.remove(path)


def remove_tree(path: str, ignore_errors: bool = False):
  """Deletes directory `path` and everything under it, if it exists."""
  try:
    if is_local(path):
      if os.path.isdir(local_path(path)):
        shutil.rmtree(local_path(path))
    elif _gfile().isdir(path):
      _gfile().rmtree(path)
  except Exception:
    if not ignore_errors:
      raise


def list_files(path: str) -> List[str]:
  """Relative paths ("a/b.txt") of all files under directory `path`, sorted."""
  if is_local(path):
    base, walk = local_path(path).rstrip('/'), os.walk
  else:
    base, walk = path.rstrip('/'), _gfile().walk
  out = []
  for dirpath, _, files in walk(base):
    rel_dir = dirpath.rstrip('/')[len(base):].strip('/')
    out.extend(f'{rel_dir}/{name}' if rel_dir else name for name in files)
  return sorted(out)


def _fsync_dir(path: str):
  fd = os.open(local_path(path), os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _parent(path: str) -> str:
  if is_local(path):
    return os.path.dirname(os.path.abspath(local_path(path)))
  return path.rstrip('/').rsplit('/', 1)[0]


def copy_file(src: str, dst: str) -> str:
  """Copies file `src` to `dst` (creating its parents); returns the sha256."""
  if not isdir(_parent(dst)):
    makedirs(_parent(dst))
  digest = hashlib.sha256()
  with open_file(src, 'rb') as r, open_file(dst, 'wb') as w:
    while True:
      chunk = r.read(_CHUNK)
      if not chunk:
        break
      digest.update(chunk)
      w.write(chunk)
    if is_local(dst):
      w.flush()
      os.fsync(w.fileno())
  return digest.hexdigest()


def write_text(path: str, text: str):
  with open_file(path, 'w') as f:
    f.write(text)
    if is_local(path):
      f.flush()
      os.fsync(f.fileno())


def copy_order(files: Sequence[str], last: Sequence[str]) -> List[str]:
  """`files` with those named in `last` moved to the end, in `last`'s order."""
  return ([f for f in files if f not in last] +
          [f for f in dict.fromkeys(last) if f in files])


def move_dir(src: str, dst: str, last: Sequence[str] = ()):
  """Moves directory `src` to `dst`, which must not exist.

  Both local: one atomic rename (same file system), then the parent of `dst`
  is fsync'ed. Otherwise every file is copied, the relative paths in `last`
  last, and `src` is deleted; if a copy fails, what was copied is deleted.
  """
  if is_local(src) and is_local(dst):
    os.rename(local_path(src), local_path(dst))
    _fsync_dir(_parent(dst))
    return
  try:
    for rel in copy_order(list_files(src), last):
      target = join(dst, rel)
      if not isdir(_parent(target)):
        makedirs(_parent(target))
      _gfile().copy(join(src, rel), target, overwrite=False)
  except BaseException:
    remove_tree(dst, ignore_errors=True)
    raise
  remove_tree(src, ignore_errors=True)


def staging_dir(final: str, tag: str) -> str:
  """A new empty local directory to build `final` in before `move_dir`.

  Beside `final` (named ".<name>.<tag>-<random>") when `final` is local, so
  the move is a rename; in the system temp directory otherwise.
  """
  if not is_local(final):
    return tempfile.mkdtemp(prefix=f'{tag}-')
  parent, name = os.path.split(os.path.abspath(local_path(final)).rstrip('/'))
  os.makedirs(parent, exist_ok=True)
  path = os.path.join(parent, f'.{name}.{tag}-{uuid.uuid4().hex[:8]}')
  os.makedirs(path)
  return path
