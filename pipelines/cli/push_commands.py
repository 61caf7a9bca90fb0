"""Commands on what was pushed: pushed, embed, neighbors, rollback.

They read only the push root (TensorFlow, no TFX).
"""

import json
import sys

from pipelines.cli import arguments
from tpu_embeddings.core import text
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import integrity


def register(sub):
  _register_pushed(sub)
  _register_embed(sub)
  _register_neighbors(sub)
  _register_rollback(sub)


# -- pushed: the complete versions under a push root, with their manifests.

def _register_pushed(sub):
  p = sub.add_parser('pushed', help='list pushed versions and their manifests')
  arguments.add_root_arguments(p)
  p.add_argument('--json', action='store_true',
                 help='print full manifests as JSON')
  p.add_argument('--verify', action='store_true',
                 help='compare every file with its manifest sha256 (reads '
                 'all bytes; default: compare sizes only)')
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


def run_pushed(args) -> int:
  root = arguments.root_from_args(args)
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


# -- embed: sentence vectors from the latest (or a given) pushed version.

def _register_embed(sub):
  p = sub.add_parser('embed', help='sentence vectors from a pushed version')
  arguments.add_root_arguments(p)
  p.add_argument('--version', help='pushed version (default: the latest)')
  p.add_argument('--json', action='store_true', help='print JSON')
  p.add_argument('sentences', nargs='+', metavar='TEXT',
                 help='sentences to embed, one argument each')
  p.set_defaults(func=run_embed)


def run_embed(args) -> int:
  root = arguments.root_from_args(args)
  version, vectors = consumer.embed(root, args.sentences, version=args.version)
  _, unknown = consumer.unknown_tokens(root, args.sentences, version=version)
  if args.json:
    print(json.dumps({'version': version, 'embeddings': [
        {'text': s, 'vector': [float(x) for x in row], 'unknown_tokens': u}
        for s, row, u in zip(args.sentences, vectors, unknown)]}))
    return 0
  print(f'pushed version {version}, dim {vectors.shape[1]}', file=sys.stderr)
  for n, (sentence, missing) in enumerate(zip(args.sentences, unknown), 1):
    if missing:
      total = len(text.tokenize(sentence))
      print(f'warning: text {n}: {len(missing)} of {total} tokens not in the '
            f'vocabulary (zero vectors): {" ".join(missing[:10])}'
            + (' ...' if len(missing) > 10 else '') + '; tokens are '
            'case-sensitive', file=sys.stderr)
  for sentence, row in zip(args.sentences, vectors):
    print(sentence + '\t' + ' '.join(f'{x:.6f}' for x in row))
  return 0


# -- neighbors: the nearest tokens of one token in a pushed version.

def _register_neighbors(sub):
  p = sub.add_parser('neighbors', help='nearest tokens by cosine similarity')
  arguments.add_root_arguments(p)
  p.add_argument('--version', help='pushed version (default: the latest)')
  p.add_argument('-k', type=int, default=10, help='how many (default 10)')
  p.add_argument('--json', action='store_true', help='print JSON')
  p.add_argument('token', help='the query token (one word)')
  p.set_defaults(func=run_neighbors)


def run_neighbors(args) -> int:
  root = arguments.root_from_args(args)
  version, rows = consumer.neighbors(root, args.token, k=args.k,
                                     version=args.version)
  if args.json:
    print(json.dumps({'version': version, 'token': args.token,
                      'neighbors': [{'token': t, 'score': s}
                                    for t, s in rows]}))
    return 0
  print(f'pushed version {version}', file=sys.stderr)
  for token, score in rows:
    print(f'{token}\t{score:.4f}')
  return 0


# -- rollback: serve an older version again, as a new and highest version.

def _register_rollback(sub):
  p = sub.add_parser(
      'rollback', help='re-publish an older pushed version as the newest')
  arguments.add_root_arguments(p)
  p.add_argument('--to', required=True, metavar='V',
                 help='the pushed version to serve again')
  p.add_argument('--keep-versions', type=int, default=0,
                 help='then keep only the newest N versions (0 = all)')
  p.set_defaults(func=run_rollback)


def run_rollback(args) -> int:
  root = arguments.root_from_args(args)
  result = consumer.rollback(root, args.to, keep_versions=args.keep_versions)
  print(f'version {result.manifests["serving"]["rollback_of"]} re-published '
        f'as version {result.version} (now served) under {root}')
  return 0
