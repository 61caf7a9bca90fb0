"""`pushed`: the complete versions under a push root, with their manifests.

Each version's files are checked against its manifest: sizes by default (one
stat per file, so as cheap for a 10 GB table as for a small one), sha256 of
every byte with `--verify` (also finds flipped bytes). A damaged version is
marked, with the rollback that serves an intact one.
"""

import json

from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import consumer


def register(sub):
  p = sub.add_parser('pushed', help='list pushed versions and their manifests')
  consumer.add_root_arguments(p)
  p.add_argument('--json', action='store_true',
                 help='print full manifests as JSON')
  p.add_argument('--verify', action='store_true',
                 help='compare every file with its manifest sha256 (reads '
                 'all bytes; default: compare sizes only)')
  p.set_defaults(func=run)


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


def run(args) -> int:
  root = consumer.root_from_args(args)
  versions = consumer.list_pushed(root)
  problems = {v.version: integrity.version_problems(
      root, v.version, verify=args.verify) for v in versions}
  if args.json:
    print(json.dumps([{
        'version': v.version,
        'serving_dir': v.serving_dir,
        'hub_dir': v.hub_dir,
        'damaged': problems[v.version],
        'manifest': v.manifest,
        'hub_manifest': v.hub_manifest,
    } for v in versions], indent=2, sort_keys=True))
    return 0
  if not versions:
    print(f'nothing pushed under {root}')
    return 0
  print(f'push root {root}')
  for v in reversed(versions):
    m = v.manifest
    note = '  (served)' if v is versions[-1] else ''
    if problems[v.version]:
      note += '  DAMAGED'
    if m.get('rollback_of'):
      note += f'  rollback of {m["rollback_of"]}'
    print(f'  {v.version:>5}  {m.get("pushed_at", "?")}  spans '
          f'{",".join(map(str, m.get("spans", []))) or "-"}  '
          f'{metrics_text(m.get("metrics", {}))}{note}')
    print(f'         source {m.get("source_model") or "-"}  run '
          f'{m.get("pipeline_run_id") or "-"}')
    for problem in problems[v.version]:
      print(f'         damaged: {problem}')
    if not args.verify and not all(
        m.get(integrity.SIZES_KEY) for m in (m, v.hub_manifest)):
      print('         sizes not in its manifest (pushed before they were '
            'recorded): only missing files checked; --verify reads them')
  served = versions[-1].version
  if problems[served]:
    print(f'served version {served} is damaged: '
          f'{integrity.way_out(root, served)}')
  return 0
