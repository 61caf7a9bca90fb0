"""Paths in a manifest: relative to the home its push root belongs to.

The home of a push root is the folder that holds it: `<home>` for the local
runner's `<home>/pushed`, `gs://bucket` for `gs://bucket/embeddings`. A
manifest records that folder as `home` (where it was pushed: which home it
belongs to) and `source_model` and `blessing` relative to it when they lie
inside it (`pipeline/EmbeddingTrainer/model/12`), so a home copied or moved
elsewhere points at its own models, never at the original's. Paths outside
the home stay absolute. Manifests written before this hold absolute paths;
`resolve` returns those unchanged.
"""

import os

from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import layout as push_layout

# The manifest fields that hold a path of the home.
PATH_FIELDS = ('source_model', 'blessing')


def _is_absolute(path: str) -> bool:
  return bool(file_system.split_scheme(path)[0]) or path.startswith('/')


def _normal(path: str) -> str:
  if file_system.is_local(path):
    return os.path.abspath(file_system.local_path(path))
  return path.rstrip('/')


def home_of(root: str) -> str:
  """The folder holding push root `root` ('' for a bucket's top level)."""
  root = _normal(push_layout.check_root(root))
  scheme, rest = file_system.split_scheme(root)
  if '/' not in rest.strip('/'):
    return '' if scheme else os.path.dirname(root)
  return scheme + rest.rstrip('/').rsplit('/', 1)[0]


def relative(path: str, root: str) -> str:
  """`path` relative to the home of `root` when inside it, else unchanged."""
  if not path or not _is_absolute(path):
    return path or ''
  home = home_of(root)
  if not home or file_system.is_local(path) != file_system.is_local(home):
    return path
  full = _normal(path)
  prefix = home.rstrip('/') + '/'
  return full[len(prefix):] if full.startswith(prefix) else path


def resolve(path: str, root: str) -> str:
  """A manifest's recorded `path` as a full path: relative ones under the
  home of `root` (the home it is read in), absolute ones as they are."""
  if not path or _is_absolute(path):
    return path or ''
  home = home_of(root)
  return file_system.join(home, path) if home else path
