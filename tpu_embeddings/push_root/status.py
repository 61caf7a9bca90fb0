"""Every numbered folder of a push root, as TF Serving sees it, with its state.

TF Serving lists `<root>/serving/` (the registry's served kind,
tpu_embeddings/artifacts/export_kinds.py), takes every integer-named folder as a
version (`0099` is version 99) and serves the highest one, complete or not.
So the *served* version here is the highest numbered serving folder, unless
a push is still writing it (on an object store a version appears file by
file; its reservation is live, tpu_embeddings/push_root/versions.py). Its
state says what TF Serving would get:

    intact     both kinds pass the load check (integrity.load_problems)
    damaged    a serving folder with a problem: a missing, changed or extra
               file, a symlink out of it, an unreadable manifest, no Hub
               twin, a folder name no push writes (`0099`, `0`); or a Hub
               folder with such a name
    pushing    a push is writing it
    leftover   a Hub folder without its serving twin (a push that died
               before its last rename); TF Serving never sees it and the
               next push removes it
"""

import dataclasses
from typing import Any, Dict, List, Optional

from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import versions

INTACT = 'intact'
DAMAGED = 'damaged'
PUSHING = 'pushing'
LEFTOVER = 'leftover'


@dataclasses.dataclass
class VersionStatus:
  version: int
  state: str
  problems: List[str]
  manifests: Dict[str, Optional[Dict[str, Any]]]
  served: bool = False

  @property
  def manifest(self) -> Dict[str, Any]:
    """The served kind's manifest, else the first other kind's, else {}."""
    for kind in (push_layout.SERVED,) + push_layout.KINDS:
      if self.manifests.get(kind):
        return self.manifests[kind]
    return {}


def _numbered(root: str) -> Dict[str, List[int]]:
  if not file_system.isdir(push_layout.check_root(root)):
    return {kind: [] for kind in push_layout.KINDS}
  return {kind: push_layout.numbered(root, kind) for kind in push_layout.KINDS}


def _being_pushed(root: str, number: int) -> bool:
  return (number >= 1 and not push_layout.is_complete(root, number) and
          versions.is_live(root, number))


def served_version(root: str) -> Optional[int]:
  """The version TF Serving serves: the highest numbered serving folder not
  being pushed; None when there is none."""
  for number in reversed(_numbered(root)[push_layout.SERVED]):
    if not _being_pushed(root, number):
      return number
  return None


def _misnamed_twin(root: str, number: int) -> bool:
  """A folder of another kind than the served one reading as `number` that
  no push named (`hub/0099`): the next push does not remove it, so it is not
  a leftover."""
  return any(not push_layout.is_pushed_name(name)
             for kind in push_layout.KINDS if kind != push_layout.SERVED
             for name in push_layout.numbered_folders(root, kind).get(
                 number, []))


def scan(root: str, verify: bool = False) -> List[VersionStatus]:
  """Every numbered folder of either kind, oldest first, with its state."""
  numbered = _numbered(root)
  serving = set(numbered[push_layout.SERVED])
  out = []
  for number in sorted(set().union(*numbered.values())):
    manifests, problems = integrity.inspect_version(root, number, verify)
    if problems and _being_pushed(root, number):
      state = PUSHING
    elif number not in serving and not _misnamed_twin(root, number):
      state = LEFTOVER
    else:
      state = DAMAGED if problems else INTACT
    out.append(VersionStatus(number, state, problems, manifests))
  served = served_version(root)
  for status in out:
    status.served = status.version == served
  return out
