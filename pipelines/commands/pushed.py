"""`pushed`: the complete versions under a push root, with their manifests."""

import json

from pipelines import consumer


def register(sub):
  p = sub.add_parser('pushed', help='list pushed versions and their manifests')
  consumer.add_root_arguments(p)
  p.add_argument('--json', action='store_true',
                 help='print full manifests as JSON')
  p.set_defaults(func=run)


def _metrics(metrics) -> str:
  return ' '.join(f'{k}={v:.4g}' if isinstance(v, float) else f'{k}={v}'
                  for k, v in sorted(metrics.items()) if not isinstance(
                      v, (dict, list))) or '-'


def run(args) -> int:
  root = consumer.root_from_args(args)
  versions = consumer.list_pushed(root)
  if args.json:
    print(json.dumps([{
        'version': v.version,
        'serving_dir': v.serving_dir,
        'hub_dir': v.hub_dir,
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
    if m.get('rollback_of'):
      note += f'  rollback of {m["rollback_of"]}'
    print(f'  {v.version:>5}  {m.get("pushed_at", "?")}  spans '
          f'{",".join(map(str, m.get("spans", []))) or "-"}  '
          f'{_metrics(m.get("metrics", {}))}{note}')
    print(f'         source {m.get("source_model") or "-"}  run '
          f'{m.get("pipeline_run_id") or "-"}')
  return 0
