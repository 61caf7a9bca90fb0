"""Is a pushed version intact? Its files checked against its manifests.

The push manifest (tpu_embeddings/push_root/manifest.py) records each file's
sha256 and its size in bytes. Three checks use them:

* `size_problems`: one stat per file, no byte read. It finds missing and
  truncated or grown files, the usual damage (an interrupted copy, a full
  disk, `truncate`).
* `load_problems`, what every reader runs on each version it uses (`pushed`,
  `embed`, `neighbors`, `lineage`, the validator's baseline):
  the sizes of all files, and the sha256 of every file but the variables'
  data shards. The shards hold the tables, nearly all the bytes, and
  TensorFlow checks each tensor's own checksum when it restores them. The
  other files are small (saved_model.pb, tfhub_module.pb, the variables
  index, vocabulary assets, warm-up requests), and damage to them loads
  without an error: two vocabulary lines swapped serve wrong neighbours.
* `checksum_problems`: every byte (`pushed --verify`, rollback).

A version is exactly its manifests: it is also damaged when its folder holds
a file its manifest does not name (`extra_problems`, every check), when a
symlink in it leads out of it or its folder is a symlink, when a folder the
pusher did not name reads as its number (`serving/0099` is version 99 to TF
Serving), when a manifest cannot be read (not JSON, a file named outside the
version), records another version or kind, or disagrees with its twin on the
push they share (source model, spans, run, time, home). Every reader checks
every registered kind (tpu_embeddings/artifacts/export_kinds.py: serving and
Hub) before it uses any.
Versions pushed before sizes were recorded have only their small files'
checksums and missing files checked.
"""

import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import manifest as manifest_lib

SIZES_KEY = 'sizes'
# Files whose damage TensorFlow finds itself when it restores them.
_SELF_CHECKED = re.compile(r'^variables/variables\.data-\d+-of-\d+$')
# Manifest fields both kinds of one push share.
SHARED_FIELDS = ('source_model', 'spans', 'eval_span', 'pipeline_run_id',
                 'pushed_at', 'home')

Manifests = Dict[str, Optional[Dict[str, Any]]]


class DamagedVersionError(ValueError):
  """A pushed version whose files do not match its manifest."""


def file_size(path: str) -> int:
  if file_system.is_local(path):
    return os.path.getsize(file_system.local_path(path))
  import tensorflow as tf
  return tf.io.gfile.stat(path).length


def file_sizes(directory: str, files: List[str]) -> Dict[str, int]:
  """{relative path: size in bytes} of `files` under `directory`."""
  return {rel: file_size(file_system.join(directory, rel))
          for rel in sorted(files)}


def size_problems(directory: str, manifest: Dict[str, Any]) -> List[str]:
  """'<file>: why' for each manifest file that is missing or has another size.
  """
  sizes = manifest.get(SIZES_KEY) or {}
  problems = []
  for rel in sorted(set(manifest.get('files', {})) | set(sizes)):
    path = file_system.join(directory, rel)
    if not file_system.exists(path):
      problems.append(f'{rel} is missing')
      continue
    if rel in sizes:
      size = file_size(path)
      if size != sizes[rel]:
        problems.append(f'{rel} is {size} bytes, its manifest records '
                        f'{sizes[rel]}')
  return problems


def _local_entries(directory: str) -> List[Tuple[str, bool]]:
  """(relative path, is a directory) of every entry under local `directory`,
  symlinks listed but not followed."""
  base = file_system.local_path(directory).rstrip('/')
  out = []
  for dirpath, dirs, files in os.walk(base):
    rel_dir = os.path.relpath(dirpath, base)
    for name in dirs + files:
      rel = name if rel_dir == '.' else f'{rel_dir}/{name}'
      out.append((rel, name in dirs and not os.path.islink(
          os.path.join(dirpath, name))))
  return sorted(out)


def _outside(directory: str, rel: str) -> bool:
  real_dir = os.path.realpath(file_system.local_path(directory))
  real = os.path.realpath(os.path.join(real_dir, rel))
  return real != real_dir and not real.startswith(real_dir + '/')


def extra_problems(directory: str, manifest: Dict[str, Any]) -> List[str]:
  """'<file>: why' for each file under `directory` its manifest does not
  name, and each symlink that leads out of `directory`: a version is exactly
  the files its manifest names."""
  named = (set(manifest.get('files', {})) | set(manifest.get(SIZES_KEY) or {})
           | {push_layout.MANIFEST_FILENAME})
  problems = []
  if not file_system.is_local(directory):  # object stores have no symlinks
    return [f'{rel} is not named in its manifest' for rel in
            file_system.list_files(directory) if rel not in named]
  base = file_system.local_path(directory)
  for rel, is_dir in _local_entries(directory):
    path = os.path.join(base, rel)
    if os.path.islink(path) and _outside(directory, rel):
      problems.append(f'{rel} is a symlink to {os.readlink(path)}, outside '
                      'the version')
    elif not is_dir and rel not in named and not os.path.isdir(path):
      problems.append(f'{rel} is not named in its manifest')
  return problems


def _digest_problems(directory: str, manifest: Dict[str, Any],
                     every_file: bool) -> List[str]:
  problems = size_problems(directory, manifest)
  problems += extra_problems(directory, manifest)
  named = {p.split(' ', 1)[0] for p in problems}
  for rel, digest in sorted(manifest.get('files', {}).items()):
    if rel in named or (not every_file and _SELF_CHECKED.match(rel)):
      continue
    if manifest_lib.sha256_file(file_system.join(directory, rel)) != digest:
      problems.append(f'{rel} has other bytes than its manifest records '
                      '(sha256 differs)')
  return problems


def load_problems(directory: str, manifest: Dict[str, Any]) -> List[str]:
  """`size_problems`, then the sha256 of every file TensorFlow does not
  check itself (module docstring)."""
  return _digest_problems(directory, manifest, every_file=False)


def checksum_problems(directory: str, manifest: Dict[str, Any]) -> List[str]:
  """`size_problems`, then the sha256 of every other file."""
  return _digest_problems(directory, manifest, every_file=True)


def _misnamed(kind: str, name: str, number: int) -> str:
  return (f'{kind}/{name} reads as version {number} (TF Serving takes every '
          'all-digit folder name as a version number), but no push names a '
          f'folder so: move {kind}/{name} out of the push root')


def _kind_problems(root: str, kind: str, number: int, verify: bool
                   ) -> Tuple[Optional[Dict[str, Any]], List[str]]:
  names = push_layout.numbered_folders(root, kind).get(number, [])
  problems = [_misnamed(kind, n, number) for n in names if n != str(number)]
  prefix = f'{kind}/{number}'
  if str(number) not in names:
    required = kind in export_kinds.required()
    return None, problems or ([f'{prefix} is missing'] if required else [])
  directory = file_system.join(push_layout.kind_dir(root, kind), str(number))
  if push_layout.is_symlink(directory):
    target = os.readlink(file_system.local_path(directory))
    return None, problems + [
        f'{prefix} is a symlink to {target}: a version is a folder the pusher '
        'wrote, not a link to one']
  shown = f'{prefix}/{push_layout.MANIFEST_FILENAME}'
  try:
    manifest = push_layout.manifest_in(directory, shown)
  except (FileNotFoundError, manifest_lib.ManifestError) as e:
    return None, problems + [str(e)]
  if manifest.get('version') != number:
    problems.append(f'{shown} records version {manifest.get("version")!r}')
  if manifest.get('kind', kind) != kind:
    problems.append(f'{shown} records kind {manifest.get("kind")!r}')
  marker = push_layout.MARKER_FILES[kind]
  if (marker not in manifest.get('files', {}) and
      not file_system.exists(file_system.join(directory, marker))):
    problems.append(f'{prefix}/{marker} is missing')
  check = checksum_problems if verify else load_problems
  problems += [f'{prefix}/{p}' for p in check(directory, manifest)]
  return manifest, problems


def inspect_version(root: str, version: Union[int, str],
                    verify: bool = False,
                    kinds: Sequence[str] = push_layout.KINDS
                    ) -> Tuple[Manifests, List[str]]:
  """({kind: manifest or None}, problems) of a numbered version, complete
  or not; problems read '<kind>/<version>/<file> ...'."""
  number = (version if isinstance(version, int) and
            not isinstance(version, bool) and version >= 0
            else push_layout.parse_version(version))
  manifests: Manifests = {}
  problems: List[str] = []
  for kind in kinds:
    manifests[kind], found = _kind_problems(root, kind, number, verify)
    problems += found
  problems += _twin_problems(manifests, number)
  return manifests, problems


def _twin_problems(manifests: Manifests, number: int) -> List[str]:
  """Where the manifests of one push disagree on a field they share."""
  present = [k for k in push_layout.KINDS if manifests.get(k)]
  problems = []
  for field in SHARED_FIELDS:
    for first, other in zip(present, present[1:]):
      values = [manifests[k].get(field) for k in (first, other)]
      if values[0] != values[1]:
        problems.append(f'{first}/{number} and {other}/{number} manifests '
                        f'disagree on {field} ({values[0]!r} and '
                        f'{values[1]!r})')
  return problems


def version_problems(root: str, version: Union[int, str],
                     verify: bool = False,
                     kinds: Sequence[str] = push_layout.KINDS) -> List[str]:
  """'<kind>/<version>/<file> ...' problems of a version's kinds: the load
  check, or every checksum with `verify`."""
  return inspect_version(root, version, verify, kinds)[1]


def newest_intact(root: str, exclude=()) -> Optional[int]:
  """The newest complete version passing the load check, or None."""
  for version in reversed(push_layout.list_versions(root,
                                                    push_layout.SERVED)):
    if version not in exclude and not version_problems(root, version):
      return version
  return None


def way_out(root: str, damaged: int) -> str:
  """What to run instead of using the damaged version."""
  good = newest_intact(root, exclude=(damaged,))
  if good is None:
    return ('no other pushed version is intact: run the pipeline to push a '
            'new one')
  return (f'serve an intact version with `python -m pipelines rollback '
          f'--push-root {push_layout.check_root(root)} --to {good}`')


def damaged_error(root: str, version: int, problems: List[str],
                  cause: str = '') -> DamagedVersionError:
  """One line: the version, its first damaged file, and the way out."""
  more = f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''
  what = (problems[0] + more) if problems else f'it cannot be loaded ({cause})'
  return DamagedVersionError(
      f'pushed version {version} under {push_layout.check_root(root)} is '
      f'damaged: {what}; {way_out(root, version)}')
