"""Atomic, versioned publishing of the serving model and Hub module.

One push:
1. reserves the next version number for every kind
   (tpu_embeddings/push_root/versions.py; the kinds are the export-kind
   registry's, tpu_embeddings/artifacts/export_kinds.py);
2. copies each source into `<root>/<kind>/.tmp-<n>-<token>`: every other file
   first, then `manifest.json`, then `saved_model.pb` / `tfhub_module.pb`;
3. moves each `<kind>/.tmp-...` to `<kind>/<n>` in the registry's publish
   order: `hub/<n>`, then `serving/<n>` (so TF Serving only sees `<n>` once
   the Hub module is there):
   one atomic rename each on local disk, a copy in the same order (marker
   file last) on object stores (tpu_embeddings/core/file_system.py);
4. applies retention (tpu_embeddings/push_root/retention.py).

A push holds the push root's lock throughout (tpu_embeddings/push_root/
root_lock.py). Given `validated_against` (the served version the model was
validated against, tpu_embeddings/push_root/served.py), it publishes only
while that version is still the served one: checked under the lock before
the copy, and again before the last move. `fields` naming paths of the home
(`source_model`, `blessing`) are recorded relative to it, with `home`
(tpu_embeddings/push_root/home_paths.py).

A push killed at any point leaves only hidden `.tmp-*` directories, a hub
version without its serving twin, or on an object store a version without its
marker file; readers never list these (tpu_embeddings/push_root/layout.py), and
the next push removes the first two.
"""

import dataclasses
import uuid
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import manifest as manifest_lib
from tpu_embeddings.push_root import retention
from tpu_embeddings.push_root import root_lock
from tpu_embeddings.push_root import served
from tpu_embeddings.push_root import versions

# Order in which kinds are moved into place: the served kind last.
RENAME_ORDER = export_kinds.publish_order()

# hook(point, kind) is called at 'reserved', 'copying' (after the first file of
# a kind), 'before_rename' and 'renamed'; tests use it to kill a push there.
Hook = Callable[[str, str], None]

# `publish(validated_against=NOT_CHECKED)`: publish whatever is served (a
# rollback, tests); None means "validated with nothing served".
NOT_CHECKED = object()

# Also importable from here.
apply_retention = retention.apply_retention
clean_stale = retention.clean_stale
reserve_version = versions.reserve_version


class PushError(RuntimeError):
  """A push could not be completed; nothing partial was left visible."""


@dataclasses.dataclass
class Published:
  version: int
  dirs: Dict[str, str]              # kind -> version directory
  manifests: Dict[str, Dict[str, Any]]  # kind -> manifest
  new: bool = True                  # False: `version` already served them


def _written_last(kind: str) -> Sequence[str]:
  """The manifest, then the marker file(s): written last, in this order.

  A version is complete only once they are all there.
  """
  return tuple(dict.fromkeys((push_layout.MANIFEST_FILENAME, 'saved_model.pb',
                              push_layout.MARKER_FILES[kind])))


def _copy_version(src: str, dst: str, kind: str, number: int,
                  fields: Mapping[str, Any], hook: Hook,
                  expected: Optional[Mapping[str, str]] = None
                  ) -> Dict[str, Any]:
  """Copies `src` into `dst` with a new manifest, in `_written_last` order.

  `expected` ({relative path: sha256}, a manifest's `files`): copy exactly
  these files, each with these bytes (else PushError); default: every file
  under `src`.
  """
  join = file_system.join
  files = (sorted(expected) if expected is not None else
           [f for f in file_system.list_files(src)
            if f != push_layout.MANIFEST_FILENAME])
  last = _written_last(kind)
  # The manifest holds the checksums of the files copied after it.
  after = [f for f in last if f in files]
  checksums = {f: manifest_lib.sha256_file(join(src, f)) for f in after}
  file_system.makedirs(dst)
  order = file_system.copy_order(files + [push_layout.MANIFEST_FILENAME], last)
  for i, rel in enumerate(order):
    if rel == push_layout.MANIFEST_FILENAME:
      manifest = manifest_lib.build(
          number, kind, checksums,
          sizes=integrity.file_sizes(src, files), **fields)
      file_system.write_text(join(dst, rel), manifest_lib.dumps(manifest))
    elif rel in after:
      if (file_system.copy_file(join(src, rel), join(dst, rel))
          != checksums[rel]):
        raise PushError(f'{join(src, rel)} changed while it was being pushed')
    else:
      checksums[rel] = file_system.copy_file(join(src, rel), join(dst, rel))
      if i == 0:
        hook('copying', kind)
  for rel, digest in sorted((expected or {}).items()):
    if checksums.get(rel) != digest:
      raise integrity.DamagedVersionError(
          f'{join(src, rel)} has other bytes than its manifest records '
          '(sha256 differs); nothing was published')
  return manifest


def _move_into_place(tmp: str, final: str, kind: str):
  if file_system.exists(final):
    raise PushError(f'{final} already exists; refusing to overwrite a version')
  file_system.move_dir(tmp, final, last=_written_last(kind))


def _no_hook(point: str, kind: str):
  del point, kind


def prepare_root(root: str) -> str:
  """Validates the root and creates its kind directories."""
  root = push_layout.check_root(root)
  if file_system.exists(root) and not file_system.isdir(root):
    raise PushError(f'push root {root} exists and is not a directory')
  for kind in push_layout.KINDS:
    # kind_dir raises if <root>/<kind> is a symlink out of the root.
    file_system.makedirs(push_layout.kind_dir(root, kind))
  return root


def check_sources(sources: Mapping[str, str]):
  """One source directory per required kind, each holding its kind's export
  (`ExportKind.checker`); optional kinds may be left out."""
  unknown = set(sources) - set(push_layout.KINDS)
  if unknown or not set(export_kinds.required()) <= set(sources):
    raise ValueError(f'publish needs one source per kind {push_layout.KINDS}, '
                     f'got {sorted(sources)}')
  for name, src in sources.items():
    problems = export_kinds.get(name).checker(src, 'source')
    if problems:
      raise FileNotFoundError(problems[0])


def _home_fields(root: str, fields: Mapping[str, Any]) -> Dict[str, Any]:
  """`fields` with the home's paths relative to it, and `home`."""
  out = dict(fields)
  for name in home_paths.PATH_FIELDS:
    if out.get(name):
      out[name] = home_paths.relative(out[name], root)
  out['home'] = home_paths.home_of(root)
  return out


def publish(root: str,
            sources: Mapping[str, str],
            fields: Optional[Mapping[str, Any]] = None,
            keep_versions: int = 0,
            hook: Optional[Hook] = None,
            validated_against: Any = NOT_CHECKED,
            files: Optional[Mapping[str, Mapping[str, str]]] = None,
            unless_served: bool = False) -> Published:
  """Publishes `sources` ({kind: dir}) as one new version.

  `fields` go into both manifests (source_model, spans, metrics,
  pipeline_run_id, ...). `validated_against`: the served identity the
  candidate was validated against (None: nothing was served); the push is
  refused with served.ServedVersionChanged if another version is served
  now. `files` ({kind: {relative path: sha256}}): copy exactly these files
  of each source, with these bytes. `unless_served`: publish nothing when
  the served version was exported from the same trained Model with the
  same exporter settings (`fields` source_model and export_config) and is
  intact: a rerun whose inputs did not change. Returns the version and its
  directories (`new` False: the served version's).
  """
  if keep_versions < 0:
    raise ValueError(f'keep_versions must be >= 0, got {keep_versions}')
  check_sources(sources)
  root = prepare_root(root)
  hook = hook or _no_hook
  fields = _home_fields(root, fields or {})
  fields.setdefault('pushed_at', manifest_lib.utc_now())
  with root_lock.held(root):
    if validated_against is not NOT_CHECKED:
      served.check_unchanged(root, validated_against)
    same = _already_served(root, sources, fields) if unless_served else None
    if same:
      return same
    published = _publish_locked(root, sources, fields, hook, validated_against,
                                files or {})
    retention.apply_retention(root, keep_versions)
  return published


def _already_served(root: str, sources: Mapping[str, str],
                    fields: Mapping[str, Any]) -> Optional[Published]:
  """The served version when it was exported from the same trained Model
  with the same exporter settings as `fields` name, and every file of it
  still has its manifest's bytes; else None (a damaged one is replaced)."""
  ident = served.identity(root)
  made_from = (fields.get('source_model'), fields.get('export_config'))
  if not ident or not all(made_from) or made_from != (
      ident['source_model'], ident['export_config']):
    return None
  number = ident['version']
  if integrity.version_problems(root, number, verify=True, kinds=sources):
    return None
  return Published(number, {k: push_layout.version_dir(root, k, number)
                            for k in sources}, {}, new=False)


def _publish_locked(root: str, sources: Mapping[str, str],
                    fields: Dict[str, Any], hook: Hook, validated_against: Any,
                    files: Mapping[str, Mapping[str, str]]) -> Published:
  """Reserves, copies and moves one version into place (the root's lock
  held)."""
  token = uuid.uuid4().hex[:12]
  order = [kind for kind in RENAME_ORDER if kind in sources]
  with versions.reserve_version(root) as number:
    hook('reserved', '')
    retention.clean_stale(root)
    temps = {k: file_system.join(push_layout.kind_dir(root, k),
                                 versions.temp_name(number, token))
             for k in order}
    finals = {k: push_layout.version_dir(root, k, number) for k in order}
    manifests, renamed = {}, []
    try:
      for kind in order:
        manifests[kind] = _copy_version(sources[kind], temps[kind], kind,
                                        number, fields, hook, files.get(kind))
      for kind in order:
        hook('before_rename', kind)
        if kind == order[-1] and validated_against is not NOT_CHECKED:
          # Object stores have no lock: look again before serving it.
          served.check_unchanged(root, validated_against)
        _move_into_place(temps[kind], finals[kind], kind)
        renamed.append(kind)
        hook('renamed', kind)
    except BaseException:
      for kind in order:
        file_system.remove_tree(temps[kind], ignore_errors=True)
      for kind in renamed:  # Kinds without their served twin.
        retention.retire(finals[kind])
      raise
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
  if not any(number in push_layout.numbered(root, k)
             for k in push_layout.KINDS):
    raise FileNotFoundError(
        f'push root {root}: cannot roll back to version {number}: there is no '
        f'such pushed version; complete versions: '
        f'{push_layout.list_versions(root, push_layout.SERVED) or "none"}')
  manifests, problems = integrity.inspect_version(root, number, verify=True)
  if problems or not push_layout.is_complete(root, number):
    problems = problems or ['it is not complete']
    raise integrity.DamagedVersionError(
        f'push root {root}: cannot roll back to version {number}: it does not '
        f'match its manifest ({"; ".join(problems[:3])}); pick another '
        'version')
  present = [k for k in push_layout.KINDS if manifests.get(k)]
  sources = {k: push_layout.version_dir(root, k, number) for k in present}
  old = manifests[push_layout.SERVED]
  fields = {
      'source_model': old.get('source_model', ''),
      'spans': old.get('spans', []),
      'metrics': old.get('metrics', {}),
      'eval_span': old.get('eval_span'),
      'pipeline_run_id': pipeline_run_id,
      'rollback_of': number,
  }
  # Exactly the files its manifests name, with the bytes they record.
  files = {k: manifests[k].get('files', {}) for k in present}
  return publish(root, sources, fields, keep_versions=keep_versions, hook=hook,
                 files=files)
