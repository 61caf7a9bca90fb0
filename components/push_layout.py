"""The push root: where the pusher publishes versions and consumers read them.

    <root>/serving/<version>/saved_model.pb, variables/, assets/, manifest.json
    <root>/hub/<version>/tfhub_module.pb, saved_model.pb, ..., manifest.json
    <root>/.reserved/<version>        version number reservations (pusher only)

`<version>` is a positive integer (TF Serving serves the highest one). Both
kinds of one push share the version number. A version is *complete* when both
`serving/<v>` and `hub/<v>` exist and each holds its `manifest.json` and its
marker file (`saved_model.pb` / `tfhub_module.pb`). The pusher writes every
version under a name starting with "." beside its final place and renames it
into place (hub first, serving last), so readers never see a partial one;
names starting with "." are never versions.

Readers use `list_versions`, `latest_version`, `version_dir` and
`read_manifest`; only complete versions are listed. Paths may be local or any
`tf.io.gfile` filesystem (gs://...). Roots or version names that escape the
root (`..`, absolute names, symlinks pointing outside) raise PushLayoutError.
"""

import json
import os
import re
import shutil
from typing import Any, Dict, List, Optional, Union

KINDS = ('serving', 'hub')
MANIFEST_FILENAME = 'manifest.json'
# The file each kind's loaders open first; copied last into a version.
MARKER_FILES = {'serving': 'saved_model.pb', 'hub': 'tfhub_module.pb'}
RESERVED_DIR = '.reserved'
HIDDEN_PREFIX = '.'

_VERSION = re.compile(r'^[1-9][0-9]{0,17}$')
_SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*://')


class PushLayoutError(ValueError):
  """A push root, kind or version name that is invalid or escapes the root."""


def is_local(path: str) -> bool:
  return not _SCHEME.match(path) or path.startswith('file://')


def _local(path: str) -> str:
  return path[len('file://'):] if path.startswith('file://') else path


class _LocalFiles:
  """The subset of `tf.io.gfile` used here, for local paths, without TF."""

  # pylint: disable=invalid-name,missing-function-docstring
  @staticmethod
  def exists(path):
    return os.path.exists(_local(path))

  @staticmethod
  def isdir(path):
    return os.path.isdir(_local(path))

  @staticmethod
  def listdir(path):
    return os.listdir(_local(path))

  @staticmethod
  def makedirs(path):
    os.makedirs(_local(path), exist_ok=True)

  @staticmethod
  def rmtree(path):
    shutil.rmtree(_local(path))

  @staticmethod
  def remove(path):
    os.remove(_local(path))

  @staticmethod
  def walk(path):
    return os.walk(_local(path))

  @staticmethod
  def GFile(path, mode='r'):
    return open(_local(path), mode)


def files_for(path: str):
  """`tf.io.gfile` for remote paths; plain `os` for local ones (no TF import)."""
  if is_local(path):
    return _LocalFiles
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def join(*parts: str) -> str:
  return '/'.join([parts[0].rstrip('/')] + [p.strip('/') for p in parts[1:]])


def check_root(root: str) -> str:
  """Returns the root without a trailing "/"; raises if it is unusable."""
  if not isinstance(root, str) or not root.strip():
    raise PushLayoutError(f'push root must be a non-empty path, got {root!r}')
  rest = _SCHEME.sub('', root, count=1)
  if '..' in rest.replace('\\', '/').split('/'):
    raise PushLayoutError(
        f'push root {root!r} contains ".."; give a path without ".." segments')
  if '\x00' in root or '\n' in root:
    raise PushLayoutError(f'push root {root!r} contains a control character')
  stripped = root.rstrip('/')
  if not stripped or (is_local(root) and not _local(stripped)):
    raise PushLayoutError(
        f'push root {root!r} is a filesystem root; give a directory under it')
  return stripped


def check_kind(kind: str) -> str:
  if kind not in KINDS:
    raise PushLayoutError(f'push kind {kind!r} is not one of {KINDS}')
  return kind


def parse_version(version: Union[int, str]) -> int:
  """A version number from an int or a directory name; raises if not one."""
  if isinstance(version, bool):
    raise PushLayoutError(f'version {version!r} must be a positive integer')
  if isinstance(version, int):
    if version < 1:
      raise PushLayoutError(f'version {version} must be a positive integer')
    return version
  if isinstance(version, str) and _VERSION.match(version):
    return int(version)
  if isinstance(version, str) and (version.startswith('/') or
                                   '..' in version or '/' in version):
    raise PushLayoutError(
        f'version {version!r} escapes the push root; a version is a plain '
        'positive integer such as 3')
  raise PushLayoutError(
      f'version {version!r} must be a positive integer such as 3')


def check_inside(root: str, path: str):
  """Raises if local `path` resolves (through symlinks) outside `root`."""
  if not is_local(root):
    return  # Object stores have no symlinks.
  real_root = os.path.realpath(_local(root))
  real = os.path.realpath(_local(path))
  if real != real_root and not real.startswith(real_root.rstrip(os.sep) +
                                               os.sep):
    raise PushLayoutError(
        f'{path} resolves to {real}, outside the push root {real_root}; '
        'remove the symlink')


def kind_dir(root: str, kind: str) -> str:
  root = check_root(root)
  path = join(root, check_kind(kind))
  check_inside(root, path)
  return path


def version_dir(root: str, kind: str, version: Union[int, str]) -> str:
  """`<root>/<kind>/<version>`, validated (it need not exist)."""
  number = parse_version(version)
  path = join(kind_dir(root, kind), str(number))
  check_inside(check_root(root), path)
  return path


def has_files(path: str, kind: str) -> bool:
  """True if `path` holds the manifest and the kind's marker file."""
  gfile = files_for(path)
  return (gfile.exists(join(path, MANIFEST_FILENAME)) and
          gfile.exists(join(path, MARKER_FILES[kind])))


def _numbered(root: str, kind: str) -> List[int]:
  """Integer-named entries of `<root>/<kind>` (complete or not)."""
  directory = kind_dir(root, kind)
  gfile = files_for(directory)
  if not gfile.isdir(directory):
    return []
  out = []
  for name in gfile.listdir(directory):
    name = name.rstrip('/')
    if _VERSION.match(name):
      out.append(int(name))
  return sorted(out)


def is_complete(root: str, version: Union[int, str]) -> bool:
  """Both kinds of `version` are in place with their manifest and marker."""
  gfile = files_for(root)
  for kind in KINDS:
    path = version_dir(root, kind, version)
    if not gfile.isdir(path) or not has_files(path, kind):
      return False
  return True


def list_versions(root: str, kind: str) -> List[int]:
  """Sorted complete versions (an empty list when nothing was pushed)."""
  check_kind(kind)
  return [v for v in _numbered(root, kind) if is_complete(root, v)]


def latest_version(root: str, kind: str) -> Optional[int]:
  versions = list_versions(root, kind)
  return versions[-1] if versions else None


def read_manifest(root: str, kind: str,
                  version: Union[int, str]) -> Dict[str, Any]:
  """The manifest of a complete version; FileNotFoundError if there is none."""
  path = version_dir(root, kind, version)
  if not is_complete(root, version):
    raise FileNotFoundError(
        f'push root {check_root(root)}: version {parse_version(version)} is '
        f'not a complete pushed version; complete: '
        f'{list_versions(root, kind) or "none"}')
  with files_for(path).GFile(join(path, MANIFEST_FILENAME)) as f:
    return json.load(f)
