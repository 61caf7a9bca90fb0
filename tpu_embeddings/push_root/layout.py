"""The push root: where the pusher publishes versions and consumers read them.

    <root>/serving/<version>/saved_model.pb, variables/, assets/, manifest.json
    <root>/hub/<version>/tfhub_module.pb, saved_model.pb, ..., manifest.json
    <root>/.reserved/<version>        version number reservations (pusher only)

`<version>` is a positive integer written without leading zeros (TF Serving
serves the highest one). TF Serving reads *every* all-digit folder name as a
version number (`0099` is version 99, `0` version 0), so `numbered_folders`
lists them all; a folder the pusher did not name (`0099`, `0`) or a version
folder that is a symlink is never complete, and readers judge it damaged
(tpu_embeddings/push_root/integrity.py). The kinds, their folders and
marker files come from the export-kind registry
(tpu_embeddings/artifacts/export_kinds.py); every kind of one push shares the
version number. A version is *complete* when the folder `<kind>/<v>` of
every required kind exists and holds its `manifest.json` and its marker
file (`saved_model.pb` / `tfhub_module.pb`). The pusher writes every version
under a name starting with "." beside its final place and renames it into
place in the registry's publish order (the served kind, `serving`, last), so
readers never see a partial one; names starting with "." are never
versions.

Readers use `list_versions`, `latest_version`, `version_dir` and
`read_manifest`; only complete versions are listed. Paths may be local or any
`tf.io.gfile` filesystem (gs://...). Roots or version names that escape the
root (`..`, absolute names, symlinks pointing outside) raise PushLayoutError.
"""

import os
import re
from typing import Any, Dict, List, Optional, Union

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import manifest as manifest_lib

KINDS = export_kinds.NAMES
# The kind TF Serving reads; versions are listed by its folders.
SERVED = export_kinds.served()
MANIFEST_FILENAME = 'manifest.json'
# The file each kind's loaders open first; copied last into a version.
MARKER_FILES = {kind.name: kind.marker for kind in export_kinds.KINDS}
RESERVED_DIR = '.reserved'

_VERSION = re.compile(r'^[1-9][0-9]{0,17}$')
_DIGITS = re.compile(r'^[0-9]+$')
# TF Serving parses a folder name as a signed 64-bit integer.
_MAX_SERVING_VERSION = 2**63 - 1

join = file_system.join


class PushLayoutError(ValueError):
  """A push root, kind or version name that is invalid or escapes the root."""


def check_root(root: str) -> str:
  """Returns the root without a trailing "/"; raises if it is unusable."""
  if not isinstance(root, str) or not root.strip():
    raise PushLayoutError(f'push root must be a non-empty path, got {root!r}')
  rest = file_system.split_scheme(root)[1]
  if '..' in rest.replace('\\', '/').split('/'):
    raise PushLayoutError(
        f'push root {root!r} contains ".."; give a path without ".." segments')
  if '\x00' in root or '\n' in root:
    raise PushLayoutError(f'push root {root!r} contains a control character')
  stripped = root.rstrip('/')
  if not stripped or (file_system.is_local(root) and
                      not file_system.local_path(stripped)):
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
  real_root = file_system.realpath(root)
  real = file_system.realpath(path)
  if real != real_root and not real.startswith(real_root.rstrip('/') + '/'):
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
  return (file_system.exists(join(path, MANIFEST_FILENAME)) and
          file_system.exists(join(path, MARKER_FILES[kind])))


def is_pushed_name(name: str) -> bool:
  """True for a folder name the pusher writes: a number without leading
  zeros."""
  return bool(_VERSION.match(name))


def numbered_folders(root: str, kind: str) -> Dict[int, List[str]]:
  """{version number: folder names} of every entry of `<root>/<kind>` that TF
  Serving reads as a version (any all-digit name within int64: `7`, `0099`,
  `0`), complete or not."""
  directory = kind_dir(root, kind)
  if not file_system.isdir(directory):
    return {}
  out: Dict[int, List[str]] = {}
  for name in sorted(file_system.listdir(directory)):
    if _DIGITS.match(name) and int(name) <= _MAX_SERVING_VERSION:
      out.setdefault(int(name), []).append(name)
  return out


def numbered(root: str, kind: str) -> List[int]:
  """Version numbers of `<root>/<kind>`'s numbered folders (complete or
  not), sorted: what TF Serving lists, serving the highest."""
  return sorted(numbered_folders(root, kind))


def is_symlink(path: str) -> bool:
  return file_system.is_local(path) and os.path.islink(
      file_system.local_path(path))


def is_complete(root: str, version: Union[int, str]) -> bool:
  """Every required kind of `version` is in place with its manifest and
  marker, in folders the pusher wrote (named as it names them, not
  symlinks)."""
  if isinstance(version, int) and not isinstance(version, bool) and (
      version < 1):
    return False
  number = parse_version(version)
  for kind in export_kinds.required():
    path = join(kind_dir(root, kind), str(number))
    if (is_symlink(path) or not file_system.isdir(path) or
        not has_files(path, kind)):
      return False
  return True


def list_versions(root: str, kind: str) -> List[int]:
  """Sorted complete versions (an empty list when nothing was pushed)."""
  check_kind(kind)
  return [v for v in numbered(root, kind) if is_complete(root, v)]


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
  return manifest_in(path)


def manifest_in(directory: str, shown: str = '') -> Dict[str, Any]:
  """The manifest in a version directory, complete or not.

  Raises FileNotFoundError without one, and ManifestError (one line naming
  the file, as `shown` if given) when it is not a JSON object or names files
  outside the version.
  """
  path = join(directory, MANIFEST_FILENAME)
  if not file_system.exists(path):
    raise FileNotFoundError(f'{shown or path} is missing')
  with file_system.open_file(path, 'rb') as f:
    raw = f.read()
  try:
    text = raw.decode('utf-8')
  except UnicodeDecodeError as e:
    raise manifest_lib.ManifestError(
        f'{shown or path} is not UTF-8 ({e})') from None
  return manifest_lib.parse(text, shown or path)
