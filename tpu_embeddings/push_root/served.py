"""Which version is served now, as a record a blessing keeps and a push checks.

A model is validated against the version served when the validator runs
(its baseline). Pushing it later is sound only while that same version is
still the served one: if another run, another home or a rollback changed
it meanwhile, the verdict compares the model with a version nobody serves
any more. So the validator records `identity(push_root)` with its verdict
and the pusher publishes only when `identity` is the same at push time
(`check_unchanged`, called by `publish.publish` under the push root's lock,
tpu_embeddings/push_root/root_lock.py).

The identity is the served version's number (tpu_embeddings/push_root/
status.py: what TF Serving picks), the folder names that read as it, and
the sha256 of their manifests' bytes: a version number pushed again (after
its folder was deleted, or a copied push root) has another manifest, with
its own `pushed_at` and run id. `pushed_at` and the run id are kept beside it
for the messages, and the trained Model and exporter settings it was made
from, which tell a push of the model it already serves (`publish`).
"""

import hashlib
import json
from typing import Any, Dict, Optional

from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import status as push_status

Identity = Optional[Dict[str, Any]]
# The fields two identities must share to be the same served version.
_COMPARED = ('version', 'folders', 'manifest_sha256')


class ServedVersionChanged(RuntimeError):
  """The served version is not the one the model was validated against."""


def _manifest_bytes(root: str, name: str) -> bytes:
  path = file_system.join(push_layout.kind_dir(root, push_layout.SERVED), name,
                          push_layout.MANIFEST_FILENAME)
  try:
    with file_system.open_file(path, 'rb') as f:
      return f.read()
  except (OSError, ValueError):  # missing or unreadable: part of the state
    return b''


def identity(root: str) -> Identity:
  """The served version's identity (module docstring); None when nothing is
  served."""
  if not root or not file_system.isdir(push_layout.check_root(root)):
    return None
  number = push_status.served_version(root)
  if number is None:
    return None
  folders = push_layout.numbered_folders(root, push_layout.SERVED).get(
      number, [])
  digest = hashlib.sha256()
  shown: Dict[str, Any] = {}
  for name in folders:
    raw = _manifest_bytes(root, name)
    digest.update(name.encode('utf-8') + b'\0' + raw + b'\0')
    try:
      manifest = json.loads(raw.decode('utf-8'))
    except ValueError:
      manifest = None
    if isinstance(manifest, dict) and not shown:
      shown = manifest
  return {
      'version': number,
      'folders': folders,
      'manifest_sha256': digest.hexdigest(),
      'pushed_at': str(shown.get('pushed_at') or ''),
      'pipeline_run_id': str(shown.get('pipeline_run_id') or ''),
      # What it was exported from, to tell a push of the same model.
      'source_model': str(shown.get('source_model') or ''),
      'export_config': str(shown.get('export_config') or ''),
  }


def key(ident: Identity) -> str:
  """A short stable text of `ident` (for a cache key): 'none' or
  '<version>:<manifest sha256>'."""
  if not ident:
    return 'none'
  return f'{ident["version"]}:{ident["manifest_sha256"]}'


def same(a: Identity, b: Identity) -> bool:
  if not a or not b:
    return not a and not b
  return all(a.get(field) == b.get(field) for field in _COMPARED)


def describe(ident: Identity) -> str:
  if not ident:
    return 'no version'
  folders = ident.get('folders') or []
  named = (f' (folder {", ".join(folders)})'
           if folders != [str(ident['version'])] else '')
  when = f' pushed {ident["pushed_at"]}' if ident.get('pushed_at') else ''
  run = (f' by run {ident["pipeline_run_id"]}'
         if ident.get('pipeline_run_id') else '')
  return f'version {ident["version"]}{named}{when}{run}'


def check_unchanged(root: str, validated_against: Identity):
  """Raises ServedVersionChanged unless what `root` serves now is
  `validated_against`."""
  now = identity(root)
  if same(validated_against, now):
    return
  raise ServedVersionChanged(
      f'push root {push_layout.check_root(root)}: nothing pushed, the served '
      f'version changed since validation (validated against '
      f'{describe(validated_against)}; served now: {describe(now)}); run the '
      'pipeline again to validate against the version served now')
