"""Removing versions: leftovers of dead pushes, and versions past retention.

Where a rename is atomic (local disk) a version is first renamed to a hidden
`.old-` name, so readers see it whole or not at all, then deleted; on object
stores it is deleted in place. Hidden leftovers of a push are removed only
once its reservation is no longer live (tpu_embeddings/push_root/versions.py).
"""

import uuid
from typing import List

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import versions

# Prefix of a version directory being deleted.
OLD_PREFIX = '.old-'


def retire(path: str):
  """Hides version directory `path` at once where possible, then deletes it."""
  if not file_system.isdir(path):
    return
  if file_system.is_local(path):
    parent, name = path.rsplit('/', 1)
    hidden = file_system.join(parent,
                              f'{OLD_PREFIX}{name}-{uuid.uuid4().hex[:8]}')
    try:
      file_system.move_dir(path, hidden)
    except FileNotFoundError:
      return  # Another cleaner got there first.
    path = hidden
  # A failed delete is retried by the next push's clean_stale.
  file_system.remove_tree(path, ignore_errors=True)


def clean_stale(root: str) -> List[str]:
  """Removes leftovers of dead pushes; returns what was removed."""
  removed = []
  for kind in push_layout.KINDS:
    directory = push_layout.kind_dir(root, kind)
    if not file_system.isdir(directory):
      continue
    for name in file_system.listdir(directory):
      path = file_system.join(directory, name)
      number = versions.temp_number(name)
      if name.startswith(OLD_PREFIX):
        file_system.remove_tree(path, ignore_errors=True)
        removed.append(path)
      elif number and not versions.is_live(root, number):
        file_system.remove_tree(path, ignore_errors=True)
        removed.append(path)
      elif (push_layout.is_pushed_name(name) and
            not push_layout.is_symlink(path)):
        number = int(name)
        # A version written by a push (it has a manifest) whose twin never
        # arrived, and whose push is gone.
        if (file_system.exists(
            file_system.join(path, push_layout.MANIFEST_FILENAME)) and
            not push_layout.is_complete(root, number) and
            not versions.is_live(root, number)):
          retire(path)
          removed.append(path)
  return removed


def apply_retention(root: str, keep_versions: int) -> List[int]:
  """Deletes all but the newest `keep_versions` complete versions (0 = keep
  all).

  Returns the deleted version numbers.
  """
  if keep_versions < 0:
    raise ValueError(f'keep_versions must be >= 0, got {keep_versions}')
  if keep_versions == 0:
    return []
  complete = push_layout.list_versions(root, push_layout.SERVED)
  drop = complete[:-keep_versions]
  for number in drop:
    # Against the publish order: TF Serving stops serving it first.
    for kind in reversed(export_kinds.publish_order()):
      retire(push_layout.version_dir(root, kind, number))
  kept = complete[-keep_versions:]
  if kept:
    versions.prune_reservations(root, min(kept))
  return drop
