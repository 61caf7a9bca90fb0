"""`pushed`: every numbered version under a push root, with its manifests.

Each version's line shows the metrics its blessing measured (the candidate's
and the baseline's of then) and the eval span they were measured on (the
manifest's `eval_span`: the span of the Examples the validator scored).
Metrics measured on different eval spans do not compare: a version whose
eval span is not the served version's says so under its line. Versions
pushed before the span was recorded are listed with "eval span unknown".
"""

import json
from typing import Any, Dict, Optional

from pipelines.cli import arguments
from pipelines.cli import failures
from tpu_embeddings.artifacts.export_kinds import HUB
from tpu_embeddings.artifacts.export_kinds import SERVING
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import status as push_status


def register(sub):
  p = sub.add_parser('pushed', help='list pushed versions and their manifests '
                     '(exit 1 if one is damaged)')
  arguments.add_root_arguments(p)
  p.add_argument('--json', action='store_true',
                 help='print full manifests as JSON')
  p.add_argument('--verify', action='store_true',
                 help='compare every file with its manifest sha256 (reads '
                 'all bytes; default: sizes, and checksums of all but the '
                 'variables\' data)')
  p.set_defaults(func=run_pushed)


def _flat(metrics) -> str:
  return ' '.join(f'{k}={v:.4g}' if isinstance(v, float) else f'{k}={v}'
                  for k, v in sorted(metrics.items()) if not isinstance(
                      v, (dict, list)) and v is not None)


def metrics_text(metrics) -> str:
  """The blessing's metrics: the candidate's, then the baseline's or why none.

  Manifests hold the validator's report `metrics`, `{'candidate': {...},
  'baseline': {...} or None}`; older or hand-made ones hold flat metrics.
  """
  if not isinstance(metrics, dict) or not metrics:
    return '-'
  if 'candidate' not in metrics and 'baseline' not in metrics:
    return _flat(metrics) or '-'
  text = _flat(metrics.get('candidate') or {}) or '-'
  baseline = metrics.get('baseline')
  if isinstance(baseline, dict) and baseline:
    return f'{text}  (baseline then: {_flat(baseline)})'
  return f'{text}  (validated without a baseline)'


def eval_span(manifest: Dict[str, Any]) -> Optional[int]:
  """The span of the eval data the version's metrics were measured on; None
  when its manifest does not record one (pushed before it was)."""
  span = manifest.get('eval_span')
  return span if isinstance(span, int) else None


def _span_text(span: Optional[int]) -> str:
  return 'an unknown eval span' if span is None else f'eval span {span}'


def comparable(manifest: Dict[str, Any], served: Optional[Dict[str, Any]]
               ) -> Optional[bool]:
  """Whether the version's metrics were measured on the served version's
  eval span; None when either span is unknown (or nothing is served)."""
  if served is None or eval_span(served) is None or eval_span(
      manifest) is None:
    return None
  return eval_span(manifest) == eval_span(served)


def span_note(v: push_status.VersionStatus,
              served: Optional[Dict[str, Any]]) -> str:
  """Why the version's metrics do not compare with the served version's
  ('' when they do, or when there is nothing to tell)."""
  if v.served or served is None or eval_span(served) is None:
    return ''
  mine = eval_span(v.manifest)
  if mine == eval_span(served):
    return ''
  return (f'metrics measured on {_span_text(mine)}, the served version\'s on '
          f'{_span_text(eval_span(served))}: '
          + ('may not compare' if mine is None else 'not comparable'))


def _marks(v: push_status.VersionStatus) -> str:
  note = '  (served)' if v.served else ''
  if v.state != push_status.INTACT:
    note += f'  {v.state.upper()}'
  if v.manifest.get('rollback_of'):
    note += f'  rollback of {v.manifest["rollback_of"]}'
  return note


def _print_version(root: str, v: push_status.VersionStatus, verify: bool,
                   served: Optional[Dict[str, Any]]):
  m = v.manifest
  spans = ','.join(map(str, m.get('spans') or [])) or '-'
  span = eval_span(m)
  print(f'  {v.version:>5}  {m.get("pushed_at", "?")}  spans {spans}  '
        f'eval span {"unknown" if span is None else span}  '
        f'{metrics_text(m.get("metrics", {}))}{_marks(v)}')
  if m:
    # Recorded relative to the home: shown in the home it is read in.
    source = home_paths.resolve(str(m.get('source_model') or ''), root)
    print(f'         source {source or "-"}  run '
          f'{m.get("pipeline_run_id") or "-"}')
  note = span_note(v, served)
  if note:
    print(f'         {note}')
  if v.state == push_status.LEFTOVER:
    print('         a Hub module without its serving twin (an interrupted '
          'push): TF Serving does not see it; the next push removes it')
  elif v.state == push_status.PUSHING:
    print('         a push is writing it')
  else:
    for problem in v.problems:
      print(f'         damaged: {problem}')
  manifests = [x for x in v.manifests.values() if x]
  if not verify and manifests and not all(
      x.get(integrity.SIZES_KEY) for x in manifests):
    print('         sizes not in its manifest (pushed before they were '
          'recorded): only missing files checked; --verify reads them')


def _json(root: str, versions, served: Optional[Dict[str, Any]]) -> str:
  return json.dumps([{
      'version': v.version, 'state': v.state, 'served': v.served,
      # Not version_dir: a symlinked folder is listed, as damaged.
      'serving_dir': push_layout.join(
          push_layout.kind_dir(root, SERVING.name), str(v.version)),
      'hub_dir': push_layout.join(push_layout.kind_dir(root, HUB.name),
                                  str(v.version)),
      'damaged': v.problems if v.state == push_status.DAMAGED else [],
      'eval_span': eval_span(v.manifest),
      'same_eval_span_as_served': comparable(v.manifest, served),
      'manifest': v.manifests.get(SERVING.name),
      'hub_manifest': v.manifests.get(HUB.name),
  } for v in versions], indent=2, sort_keys=True)


def run_pushed(args) -> int:
  """Lists every numbered version; exit 1 when one is damaged."""
  root = arguments.root_from_args(args)
  versions = push_status.scan(root, verify=args.verify)
  damaged = [v for v in versions if v.state == push_status.DAMAGED]
  code = failures.EXIT_DAMAGED if damaged else 0
  served = next((v for v in versions if v.served), None)
  served_manifest = served.manifest if served else None
  if args.json:
    print(_json(root, versions, served_manifest))
    return code
  if not versions:
    print(f'nothing pushed under {root}')
    return 0
  print(f'push root {root}')
  for v in reversed(versions):
    _print_version(root, v, args.verify, served_manifest)
  if served and eval_span(served.manifest) is None and len(versions) > 1:
    print(f'served version {served.version} does not record its eval span '
          '(pushed before it was recorded): the versions\' metrics may have '
          'been measured on different eval data')
  if served and served.state == push_status.DAMAGED:
    print(f'served version {served.version} is damaged (TF Serving serves the '
          f'highest version): {integrity.way_out(root, served.version)}')
  elif damaged:
    print(f'damaged versions: {", ".join(str(v.version) for v in damaged)} '
          '(do not roll back to them)')
  return code
