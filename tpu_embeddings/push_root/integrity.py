"""Is a pushed version intact? A cheap size check and a full checksum check.

The push manifest (tpu_embeddings/push_root/manifest.py) records each file's
sha256 and its size in bytes. Two checks use them:

* `size_problems`: one stat per file, no byte read, so it costs the same for
  a 10 GB table as for a 1 KB one (and one request per file on gs://). It
  finds missing and truncated or grown files, the usual damage (an
  interrupted copy, a full disk, `truncate`). `pushed`, consumers and the
  validator run it on every version they look at.
* `checksum_problems`: reads every byte (sha256) and also finds flipped
  bytes. It runs only where reading everything is the job anyway or already
  failed: `pushed --verify`, and after a load failed, to name the file.

TensorFlow's checkpoint reader could parse the variables index instead, but
it needs TensorFlow in `pushed`, covers variables only (not saved_model.pb,
assets or the Hub module) and gives shapes, not byte offsets, so string
tensors have no expected size; the manifest's sizes cover every file.
Versions pushed before sizes were recorded are only checked for missing
files by `size_problems`.
"""

import os
from typing import Any, Dict, List, Optional, Union

from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import manifest as manifest_lib

SIZES_KEY = 'sizes'


class DamagedVersionError(ValueError):
  """A pushed version whose files do not match its manifest."""


def file_size(path: str) -> int:
  if file_system.is_local(path):
    return os.path.getsize(file_system.local_path(path))
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
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


def checksum_problems(directory: str, manifest: Dict[str, Any]) -> List[str]:
  """Like `size_problems`, then '<file>: sha256 differs' for the rest."""
  problems = size_problems(directory, manifest)
  named = {p.split(' ', 1)[0] for p in problems}
  for rel, digest in sorted(manifest.get('files', {}).items()):
    if rel not in named and manifest_lib.sha256_file(
        file_system.join(directory, rel)) != digest:
      problems.append(f'{rel} has other bytes than its manifest records '
                      '(sha256 differs)')
  return problems


def version_problems(root: str, version: Union[int, str],
                     verify: bool = False,
                     kinds=push_layout.KINDS) -> List[str]:
  """'<kind>/<version>/<file> ...' problems of a complete version's kinds."""
  check = checksum_problems if verify else size_problems
  number = push_layout.parse_version(version)
  problems = []
  for kind in kinds:
    directory = push_layout.version_dir(root, kind, number)
    try:
      manifest = push_layout.read_manifest(root, kind, number)
    except ValueError as e:
      problems.append(f'{kind}/{number}/{push_layout.MANIFEST_FILENAME} '
                      f'cannot be read ({e})')
      continue
    problems += [f'{kind}/{number}/{p}' for p in check(directory, manifest)]
  return problems


def newest_intact(root: str, exclude=()) -> Optional[int]:
  """The newest complete version passing `size_problems`, or None."""
  for version in reversed(push_layout.list_versions(root, 'serving')):
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
