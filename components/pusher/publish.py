"""Atomic, versioned publishing of the serving model and Hub module.

One push:
1. reserves the next version number for both kinds (`<root>/.reserved/<n>`,
   created exclusively, so two racing pushes never get the same number and a
   number is never reused);
2. copies each source into `<root>/<kind>/.tmp-<n>-<token>` (every other file
   first, then `manifest.json`, then `saved_model.pb` / `tfhub_module.pb`);
3. renames `hub/.tmp-...` to `hub/<n>`, then `serving/.tmp-...` to
   `serving/<n>` (so TF Serving only sees `<n>` once the Hub module is there);
4. applies retention (keep the newest N complete versions).

A push killed at any point leaves only hidden `.tmp-*` directories (or a hub
version without its serving twin), which readers never list (see
components/push_layout.py) and the next push removes.

On local paths the rename is atomic and the reservation is held with an
`flock` for the life of the push, which is how a later push tells a dead
push's leftovers from a live one's. On object stores (gs://) directories do
not exist and rename copies object by object: the version is copied in the
same order straight into place (marker file last) and reservations use a
best-effort write-and-read-back; leftovers older than a day are cleaned.
"""

import contextlib
import dataclasses
import errno
import os
import time
import uuid
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from components import push_layout
from components.pusher import manifest as manifest_lib

TMP_PREFIX = '.tmp-'
OLD_PREFIX = '.old-'
# Leftovers of pushes to object stores older than this are removed.
REMOTE_STALE_SECONDS = 24 * 3600
# Order in which kinds are renamed into place: serving last.
RENAME_ORDER = ('hub', 'serving')

# hook(point, kind) is called at 'reserved', 'copying' (after the first file of
# a kind), 'before_rename' and 'renamed'; tests use it to kill a push there.
Hook = Callable[[str, str], None]


class PushError(RuntimeError):
  """A push could not be completed; nothing partial was left visible."""


@dataclasses.dataclass
class Published:
  version: int
  dirs: Dict[str, str]              # kind -> version directory
  manifests: Dict[str, Dict[str, Any]]  # kind -> manifest


_files = push_layout.files_for


def _join(*parts: str) -> str:
  return push_layout.join(*parts)


def _local(path: str) -> str:
  return path[len('file://'):] if path.startswith('file://') else path


# -- version reservation -------------------------------------------------------


def _highest_number(root: str) -> int:
  """The highest number used so far: versions of any state and reservations."""
  gfile = _files(root)
  numbers = [0]
  for kind in push_layout.KINDS:
    directory = push_layout.kind_dir(root, kind)
    if gfile.isdir(directory):
      for name in gfile.listdir(directory):
        name = name.rstrip('/')
        if name.isdigit():
          numbers.append(int(name))
          if not name.startswith('0'):  # Refuse symlinks out of the root.
            push_layout.version_dir(root, kind, int(name))
        elif name.startswith(TMP_PREFIX):
          number = _tmp_number(name)
          if number:
            numbers.append(number)
  reserved = _join(root, push_layout.RESERVED_DIR)
  if gfile.isdir(reserved):
    numbers.extend(int(n.rstrip('/')) for n in gfile.listdir(reserved)
                   if n.rstrip('/').isdigit())
  return max(numbers)


def _tmp_number(name: str) -> Optional[int]:
  head = name[len(TMP_PREFIX):].split('-', 1)[0]
  return int(head) if head.isdigit() else None


@contextlib.contextmanager
def reserve_version(root: str) -> Iterator[int]:
  """Yields a version number no other push has or will get."""
  reserved = _join(root, push_layout.RESERVED_DIR)
  _files(reserved).makedirs(reserved)
  number = _highest_number(root) + 1
  if push_layout.is_local(root):
    import fcntl  # pylint: disable=g-import-not-at-top
    while True:
      path = _local(_join(reserved, str(number)))
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
  else:
    gfile = _files(root)
    token = uuid.uuid4().hex
    while True:
      path = _join(reserved, str(number))
      if not gfile.exists(path):
        with gfile.GFile(path, 'w') as f:
          f.write(token)
        time.sleep(0.2)  # Let a racing writer's object land before reading.
        with gfile.GFile(path) as f:
          if f.read() == token:
            break
      number += 1
    yield number


def _is_live(root: str, number: int) -> bool:
  """True while the push that reserved `number` may still be running."""
  path = _join(root, push_layout.RESERVED_DIR, str(number))
  if push_layout.is_local(root):
    import fcntl  # pylint: disable=g-import-not-at-top
    try:
      fd = os.open(_local(path), os.O_RDONLY)
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
  gfile = _files(root)
  if not gfile.exists(path):
    return False
  age = time.time() - gfile.stat(path).mtime_nsec / 1e9
  return age < REMOTE_STALE_SECONDS


# -- copying -------------------------------------------------------------------


def _source_files(src: str) -> List[str]:
  """Relative paths of all files under `src`, sorted."""
  gfile = _files(src)
  out = []
  base = src.rstrip('/')
  for dirpath, _, files in gfile.walk(base):
    rel_dir = dirpath.rstrip('/')[len(base):].strip('/')
    for name in files:
      out.append(f'{rel_dir}/{name}' if rel_dir else name)
  return sorted(out)


def _copy_file(src: str, dst: str) -> str:
  """Copies one file, returns its sha256; local copies are fsync'ed."""
  import hashlib  # pylint: disable=g-import-not-at-top
  gfile = _files(src)
  digest = hashlib.sha256()
  local = push_layout.is_local(dst)
  with gfile.GFile(src, 'rb') as r:
    w = open(_local(dst), 'wb') if local else _files(dst).GFile(dst, 'wb')
    with w:
      while True:
        chunk = r.read(1 << 20)
        if not chunk:
          break
        digest.update(chunk)
        w.write(chunk)
      if local:
        w.flush()
        os.fsync(w.fileno())
  return digest.hexdigest()


def _write_text(path: str, text: str):
  if push_layout.is_local(path):
    with open(_local(path), 'w') as f:
      f.write(text)
      f.flush()
      os.fsync(f.fileno())
  else:
    with _files(path).GFile(path, 'w') as f:
      f.write(text)


def _ordered(files: List[str], kind: str) -> List[str]:
  """Files in copy order: everything else, then the kind's marker file(s)."""
  last = ['saved_model.pb', push_layout.MARKER_FILES[kind]]
  return ([f for f in files if f not in last] +
          [f for f in dict.fromkeys(last) if f in files])


def _copy_version(src: str, dst: str, kind: str, number: int,
                  fields: Mapping[str, Any], hook: Hook) -> Dict[str, Any]:
  """Copies `src` into `dst` with a manifest; the marker file goes last."""
  gfile = _files(dst)
  files = [f for f in _source_files(src)
           if f != push_layout.MANIFEST_FILENAME]
  ordered = _ordered(files, kind)
  marker = push_layout.MARKER_FILES[kind]
  # Checksums of the marker file(s) are needed before the manifest is written.
  tail = [f for f in ordered if f in ('saved_model.pb', marker)]
  checksums = {f: manifest_lib.sha256_file(_join(src, f)) for f in tail}
  gfile.makedirs(dst)
  for i, rel in enumerate(ordered):
    if rel in tail:
      continue
    target = _join(dst, rel)
    parent = target.rsplit('/', 1)[0]
    if not gfile.isdir(parent):
      gfile.makedirs(parent)
    checksums[rel] = _copy_file(_join(src, rel), target)
    if i == 0:
      hook('copying', kind)
  manifest = manifest_lib.build(number, kind, checksums, **fields)
  _write_text(_join(dst, push_layout.MANIFEST_FILENAME),
              manifest_lib.dumps(manifest))
  for rel in tail:
    if _copy_file(_join(src, rel), _join(dst, rel)) != checksums[rel]:
      raise PushError(f'{_join(src, rel)} changed while it was being pushed')
  return manifest


def _fsync_dir(path: str):
  fd = os.open(_local(path), os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _move_into_place(tmp: str, final: str, kind: str):
  gfile = _files(final)
  if gfile.exists(final):
    raise PushError(f'{final} already exists; refusing to overwrite a version')
  if push_layout.is_local(final):
    os.rename(_local(tmp), _local(final))
    _fsync_dir(os.path.dirname(_local(final)))
    return
  # Object stores: copy in the same order (marker last), then drop the temp.
  files = _source_files(tmp)
  order = [f for f in _ordered(files, kind)
           if f != push_layout.MANIFEST_FILENAME]
  marker_files = [f for f in order if f in ('saved_model.pb',
                                            push_layout.MARKER_FILES[kind])]
  order = ([f for f in order if f not in marker_files] +
           [push_layout.MANIFEST_FILENAME] + marker_files)
  for rel in order:
    target = _join(final, rel)
    parent = target.rsplit('/', 1)[0]
    if not gfile.isdir(parent):
      gfile.makedirs(parent)
    gfile.copy(_join(tmp, rel), target, overwrite=False)
  _remove_tree(tmp)


def _remove_tree(path: str):
  gfile = _files(path)
  try:
    if gfile.isdir(path):
      gfile.rmtree(path)
  except Exception:  # pylint: disable=broad-except
    pass  # Another cleaner got there first; leftovers are retried next push.


def _retire(path: str):
  """Hides a version directory at once (rename), then deletes it."""
  gfile = _files(path)
  if not gfile.isdir(path):
    return
  parent, name = path.rsplit('/', 1)
  hidden = _join(parent, f'{OLD_PREFIX}{name}-{uuid.uuid4().hex[:8]}')
  if push_layout.is_local(path):
    try:
      os.rename(_local(path), _local(hidden))
    except FileNotFoundError:
      return
    _remove_tree(hidden)
  else:
    _remove_tree(path)


# -- cleanup and retention -----------------------------------------------------


def clean_stale(root: str) -> List[str]:
  """Removes leftovers of dead pushes; returns what was removed."""
  gfile = _files(root)
  removed = []
  for kind in push_layout.KINDS:
    directory = push_layout.kind_dir(root, kind)
    if not gfile.isdir(directory):
      continue
    for name in gfile.listdir(directory):
      name = name.rstrip('/')
      path = _join(directory, name)
      if name.startswith(OLD_PREFIX):
        _remove_tree(path)
        removed.append(path)
      elif name.startswith(TMP_PREFIX):
        number = _tmp_number(name)
        if number and not _is_live(root, number):
          _remove_tree(path)
          removed.append(path)
      elif name.isdigit() and not name.startswith('0'):
        number = int(name)
        # A version written by a push (it has a manifest) whose twin never
        # arrived, and whose push is gone.
        if (gfile.exists(_join(path, push_layout.MANIFEST_FILENAME)) and
            not push_layout.is_complete(root, number) and
            not _is_live(root, number)):
          _retire(path)
          removed.append(path)
  return removed


def apply_retention(root: str, keep_versions: int) -> List[int]:
  """Deletes all but the newest `keep_versions` complete versions (0 = keep all).

  Returns the deleted version numbers.
  """
  if keep_versions < 0:
    raise ValueError(f'keep_versions must be >= 0, got {keep_versions}')
  if keep_versions == 0:
    return []
  versions = push_layout.list_versions(root, 'serving')
  drop = versions[:-keep_versions]
  for number in drop:
    for kind in ('serving', 'hub'):  # Serving first: TF Serving stops first.
      _retire(push_layout.version_dir(root, kind, number))
  kept = versions[-keep_versions:]
  if kept:
    _prune_reservations(root, min(kept))
  return drop


def _prune_reservations(root: str, below: int):
  """Drops reservation markers under `below` (never the highest one)."""
  gfile = _files(root)
  reserved = _join(root, push_layout.RESERVED_DIR)
  if not gfile.isdir(reserved):
    return
  for name in gfile.listdir(reserved):
    name = name.rstrip('/')
    if not name.isdigit() or int(name) >= below:
      continue
    path = _join(reserved, name)
    if push_layout.is_local(root):
      import fcntl  # pylint: disable=g-import-not-at-top
      try:
        fd = os.open(_local(path), os.O_RDONLY)
      except FileNotFoundError:
        continue
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(_local(path))
      except OSError:
        pass  # Held by a running push.
      finally:
        os.close(fd)
    elif not _is_live(root, int(name)):
      gfile.remove(path)


# -- publish and rollback ------------------------------------------------------


def _no_hook(point: str, kind: str):
  del point, kind


def prepare_root(root: str) -> str:
  """Validates the root and creates its kind directories."""
  root = push_layout.check_root(root)
  gfile = _files(root)
  if push_layout.is_local(root) and os.path.lexists(_local(root)) and (
      not os.path.isdir(_local(root))):
    raise PushError(f'push root {root} exists and is not a directory')
  for kind in push_layout.KINDS:
    if push_layout.is_local(root) and os.path.islink(
        _local(_join(root, kind))):
      push_layout.kind_dir(root, kind)  # Raises if it points outside.
    gfile.makedirs(push_layout.kind_dir(root, kind))
  return root


def check_sources(sources: Mapping[str, str]):
  if set(sources) != set(push_layout.KINDS):
    raise ValueError(f'publish needs one source per kind {push_layout.KINDS}, '
                     f'got {sorted(sources)}')
  for kind, src in sources.items():
    marker = push_layout.MARKER_FILES[kind]
    gfile = _files(src or '.')
    if not src or not gfile.isdir(src):
      raise FileNotFoundError(f'{kind} source {src!r} is not a directory')
    if not gfile.exists(_join(src, marker)):
      raise FileNotFoundError(
          f'{kind} source {src} has no {marker}; expected a '
          f'{"TF2 SavedModel" if kind == "serving" else "TF1 Hub module"} '
          'directory')


def publish(root: str,
            sources: Mapping[str, str],
            fields: Optional[Mapping[str, Any]] = None,
            keep_versions: int = 0,
            hook: Optional[Hook] = None) -> Published:
  """Publishes `sources` ({'serving': dir, 'hub': dir}) as one new version.

  `fields` go into both manifests (source_model, spans, metrics,
  pipeline_run_id, ...). Returns the version and its directories.
  """
  if keep_versions < 0:
    raise ValueError(f'keep_versions must be >= 0, got {keep_versions}')
  check_sources(sources)
  root = prepare_root(root)
  hook = hook or _no_hook
  fields = dict(fields or {})
  fields.setdefault('pushed_at', manifest_lib.utc_now())
  token = uuid.uuid4().hex[:12]
  with reserve_version(root) as number:
    hook('reserved', '')
    clean_stale(root)
    temps = {k: _join(push_layout.kind_dir(root, k),
                      f'{TMP_PREFIX}{number}-{token}')
             for k in push_layout.KINDS}
    finals = {k: push_layout.version_dir(root, k, number)
              for k in push_layout.KINDS}
    manifests, renamed = {}, []
    try:
      for kind in RENAME_ORDER:
        manifests[kind] = _copy_version(sources[kind], temps[kind], kind,
                                        number, fields, hook)
      for kind in RENAME_ORDER:
        hook('before_rename', kind)
        _move_into_place(temps[kind], finals[kind], kind)
        renamed.append(kind)
        hook('renamed', kind)
    except BaseException:
      for kind in push_layout.KINDS:
        _remove_tree(temps[kind])
      for kind in renamed:  # A hub version without its serving twin.
        _retire(finals[kind])
      raise
  apply_retention(root, keep_versions)
  return Published(number, finals, manifests)


def rollback(root: str, to_version: int,
             pipeline_run_id: str = '',
             keep_versions: int = 0,
             hook: Optional[Hook] = None) -> Published:
  """Re-publishes complete version `to_version` as a new, highest version.

  TF Serving serves the highest version, so this makes the old model the
  served one again without touching any existing directory.
  """
  root = push_layout.check_root(root)
  number = push_layout.parse_version(to_version)
  if not push_layout.is_complete(root, number):
    raise FileNotFoundError(
        f'push root {root}: cannot roll back to version {number}: it is not a '
        f'complete pushed version; complete versions: '
        f'{push_layout.list_versions(root, "serving") or "none"}')
  sources = {k: push_layout.version_dir(root, k, number)
             for k in push_layout.KINDS}
  old = push_layout.read_manifest(root, 'serving', number)
  for kind, src in sources.items():
    bad = manifest_lib.verify(src, push_layout.read_manifest(root, kind,
                                                             number))
    if bad:
      raise PushError(
          f'push root {root}: version {number} ({kind}) does not match its '
          f'manifest ({", ".join(bad[:3])}); pick another version')
  fields = {
      'source_model': old.get('source_model', ''),
      'spans': old.get('spans', []),
      'metrics': old.get('metrics', {}),
      'pipeline_run_id': pipeline_run_id,
      'rollback_of': number,
  }
  return publish(root, sources, fields, keep_versions=keep_versions, hook=hook)
