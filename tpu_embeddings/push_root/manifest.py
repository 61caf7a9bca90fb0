"""`manifest.json`: what one pushed version holds and where it came from.

    {
      "format_version": 1,
      "version": 7,                      pushed version number
      "kind": <kind>,                    tpu_embeddings/artifacts/export_kinds
      "source_model": "<trainer Model URI>",
      "spans": [3, 4],                   data spans the model was trained on
      "metrics": {...},                  the blessing's report.json "metrics"
      "eval_span": 4,                    the span of the eval data they were
                                         measured on (null: not recorded)
      "files": {"saved_model.pb": "<sha256>", "variables/...": ...},
      "sizes": {"saved_model.pb": 81234, ...},   bytes of each file
      "pipeline_run_id": "...",
      "pushed_at": "2026-12-01T10:00:00Z",
      "rollback_of": 5                   only on versions made by a rollback
    }
"""

import datetime
import hashlib
import json
import posixpath
from typing import Any, Dict, Iterable, List, Optional

from tpu_embeddings.core import file_system

FORMAT_VERSION = 1
_CHUNK = 1 << 20
# The manifest keys that map file paths to something.
PATH_KEYS = ('files', 'sizes')


class ManifestError(ValueError):
  """A manifest that cannot be used: not JSON, not an object, or naming a
  file outside its version."""


def path_problem(rel: Any) -> Optional[str]:
  """Why `rel` is not a plain relative path inside a version, or None.

  Plain: a non-empty string of "/"-separated names, none of them "", "." or
  "..", no backslash or control character, not absolute.
  """
  if not isinstance(rel, str) or not rel:
    return 'is not a non-empty string'
  if rel.startswith('/') or '\\' in rel or any(ord(c) < 32 for c in rel):
    return 'is absolute or holds a backslash or control character'
  if any(part in ('', '.', '..') for part in rel.split('/')):
    return 'has an empty, "." or ".." segment'
  if posixpath.normpath(rel) != rel:
    return 'is not normalised'
  return None


def parse(text: str, path: str) -> Dict[str, Any]:
  """The manifest in `text` (read from `path`); raises ManifestError naming
  `path` when it is not a JSON object or names a file outside the version."""
  try:
    manifest = json.loads(text)
  except ValueError as e:
    raise ManifestError(f'{path} is not valid JSON ({e})') from None
  if not isinstance(manifest, dict):
    raise ManifestError(f'{path} is not a JSON object')
  for key in PATH_KEYS:
    entries = manifest.get(key, {})
    if not isinstance(entries, dict):
      raise ManifestError(f'{path}: "{key}" is not a JSON object')
    for rel in entries:
      problem = path_problem(rel)
      if problem:
        raise ManifestError(
            f'{path} names the file {rel!r}, which {problem}: a manifest '
            'names only files inside its version')
  return manifest


def utc_now() -> str:
  return datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%dT%H:%M:%SZ')


def sha256_file(path: str) -> str:
  digest = hashlib.sha256()
  with file_system.open_file(path, 'rb') as f:
    while True:
      chunk = f.read(_CHUNK)
      if not chunk:
        break
      digest.update(chunk)
  return digest.hexdigest()


def build(version: int, kind: str, files: Dict[str, str],
          source_model: str = '', spans: Iterable[int] = (),
          metrics: Optional[Dict[str, Any]] = None,
          eval_span: Optional[int] = None,
          pipeline_run_id: Optional[str] = None,
          pushed_at: Optional[str] = None,
          sizes: Optional[Dict[str, int]] = None,
          **extra: Any) -> Dict[str, Any]:
  """A manifest dict; `files` maps relative paths to sha256 hex digests.

  `sizes` maps the same paths to their sizes in bytes: checking them needs
  no read (tpu_embeddings/push_root/integrity.py).
  """
  manifest = {
      'format_version': FORMAT_VERSION,
      'version': int(version),
      'kind': kind,
      'source_model': source_model or '',
      'spans': sorted(int(s) for s in spans),
      'metrics': dict(metrics or {}),
      'eval_span': None if eval_span is None else int(eval_span),
      'files': dict(sorted(files.items())),
      'sizes': dict(sorted((sizes or {}).items())),
      'pipeline_run_id': pipeline_run_id or '',
      'pushed_at': pushed_at or utc_now(),
  }
  manifest.update(extra)
  return manifest


def dumps(manifest: Dict[str, Any]) -> str:
  return json.dumps(manifest, indent=2, sort_keys=True) + '\n'


def verify(directory: str, manifest: Dict[str, Any]) -> List[str]:
  """Relative paths whose sha256 differs from the manifest or that are missing.
  """
  bad = []
  for rel, digest in manifest.get('files', {}).items():
    if path_problem(rel):
      bad.append(rel)
      continue
    path = f'{directory.rstrip("/")}/{rel}'
    if not file_system.exists(path) or sha256_file(path) != digest:
      bad.append(rel)
  return bad


def read_report(blessing_uri: str) -> Any:
  """`<blessing uri>/report.json` as JSON (None when absent); ValueError
  naming the file when it is not JSON."""
  path = f'{blessing_uri.rstrip("/")}/report.json'
  if not file_system.exists(path):
    return None
  with file_system.open_file(path) as f:
    try:
      return json.load(f)
    except ValueError as e:
      raise ValueError(f'blessing report {path} is not valid JSON '
                       f'({e})') from None


def read_blessing(blessing_uri: str) -> Dict[str, Any]:
  """What a push records of `<blessing uri>/report.json`: its `metrics`, and
  `eval_span`, the span of the eval data they were measured on (its
  `eval_data.span`); {} and None when absent."""
  report = read_report(blessing_uri)
  report = report if isinstance(report, dict) else {}
  metrics, eval_data = report.get('metrics'), report.get('eval_data')
  span = eval_data.get('span') if isinstance(eval_data, dict) else None
  return {'metrics': dict(metrics) if isinstance(metrics, dict) else {},
          'eval_span': span if isinstance(span, int) else None}
