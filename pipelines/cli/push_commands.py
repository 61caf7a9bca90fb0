"""Commands on what was pushed: pushed, embed, neighbors, rollback.

They read only the push root (TensorFlow, no TFX).
"""

import json
import sys

from pipelines.cli import arguments
from pipelines.cli import failures
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts.export_kinds import HUB
from tpu_embeddings.artifacts.export_kinds import SERVING
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import declared
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import status as push_status


def register(sub):
  _register_pushed(sub)
  _register_embed(sub)
  _register_neighbors(sub)
  _register_rollback(sub)


# -- pushed: every numbered version under a push root, with its manifests.

def _register_pushed(sub):
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


def _marks(v: push_status.VersionStatus) -> str:
  note = '  (served)' if v.served else ''
  if v.state != push_status.INTACT:
    note += f'  {v.state.upper()}'
  if v.manifest.get('rollback_of'):
    note += f'  rollback of {v.manifest["rollback_of"]}'
  return note


def _print_version(root: str, v: push_status.VersionStatus, verify: bool):
  m = v.manifest
  spans = ','.join(map(str, m.get('spans') or [])) or '-'
  print(f'  {v.version:>5}  {m.get("pushed_at", "?")}  spans {spans}  '
        f'{metrics_text(m.get("metrics", {}))}{_marks(v)}')
  if m:
    # Recorded relative to the home: shown in the home it is read in.
    source = home_paths.resolve(str(m.get('source_model') or ''), root)
    print(f'         source {source or "-"}  run '
          f'{m.get("pipeline_run_id") or "-"}')
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


def run_pushed(args) -> int:
  """Lists every numbered version; exit 1 when one is damaged."""
  root = arguments.root_from_args(args)
  versions = push_status.scan(root, verify=args.verify)
  damaged = [v for v in versions if v.state == push_status.DAMAGED]
  code = failures.EXIT_DAMAGED if damaged else 0
  if args.json:
    print(json.dumps([{
        'version': v.version, 'state': v.state, 'served': v.served,
        # Not version_dir: a symlinked folder is listed, as damaged.
        'serving_dir': push_layout.join(
            push_layout.kind_dir(root, SERVING.name), str(v.version)),
        'hub_dir': push_layout.join(push_layout.kind_dir(root, HUB.name),
                                    str(v.version)),
        'damaged': v.problems if v.state == push_status.DAMAGED else [],
        'manifest': v.manifests.get(SERVING.name),
        'hub_manifest': v.manifests.get(HUB.name),
    } for v in versions], indent=2, sort_keys=True))
    return code
  if not versions:
    print(f'nothing pushed under {root}')
    return 0
  print(f'push root {root}')
  for v in reversed(versions):
    _print_version(root, v, args.verify)
  served = next((v for v in versions if v.served), None)
  if served and served.state == push_status.DAMAGED:
    print(f'served version {served.version} is damaged (TF Serving serves the '
          f'highest version): {integrity.way_out(root, served.version)}')
  elif damaged:
    print(f'damaged versions: {", ".join(str(v.version) for v in damaged)} '
          '(do not roll back to them)')
  return code


# -- embed: vectors from a signature of the latest (or a given) version.

def _register_embed(sub):
  p = sub.add_parser('embed', help='vectors from a signature of a pushed '
                     'version (skip-gram: sentence vectors)')
  arguments.add_root_arguments(p)
  p.add_argument('--version', help='pushed version (default: the latest)')
  p.add_argument('--signature', default=serving_contract.SERVING_DEFAULT,
                 help='the signature to call (default: '
                 f'{serving_contract.SERVING_DEFAULT}); `run` lists them')
  p.add_argument('--input', action='append', default=[], metavar='NAME=VALUE',
                 help='one value of an input of a signature that takes '
                 'several, once per row and input, e.g. --input user_id=u1 '
                 '--input "history=i1 i2"')
  p.add_argument('--json', action='store_true', help='print JSON')
  p.add_argument('sentences', nargs='*', metavar='TEXT',
                 help='values of the signature\'s one input (skip-gram: '
                 'sentences), one argument each')
  p.set_defaults(func=run_embed)


def _named_inputs(items) -> dict:
  """`--input NAME=VALUE` items as {name: [values]}, in the order given."""
  found = {}
  for item in items:
    name, sep, value = item.partition('=')
    if not sep or not name:
      raise ValueError(f'--input {item!r}: expected NAME=VALUE')
    found.setdefault(name, []).append(value)
  return found


def _embed_rows(args, function):
  """The rows `embed` feeds: TEXT arguments for a one-input signature, else
  --input values by name."""
  if args.sentences and args.input:
    raise ValueError('embed: give TEXT arguments or --input NAME=VALUE, not '
                     'both')
  if args.input:
    return _named_inputs(args.input)
  names = sorted(declared.inputs(function))
  if len(names) != 1:
    raise ValueError(f'embed: signature {args.signature!r} takes inputs '
                     f'{", ".join(names)}: give each as --input NAME=VALUE, '
                     'once per row')
  if not args.sentences:
    raise ValueError(f'embed: give at least one value of input {names[0]!r}')
  return args.sentences


def _row_labels(rows) -> list:
  """Each row's values, tab-separated (inputs in name order)."""
  if not isinstance(rows, dict):
    return list(rows)
  names = sorted(rows)
  return ['\t'.join(str(rows[n][i]) for n in names)
          for i in range(len(rows[names[0]]))]


def _row_json(rows, i: int) -> dict:
  if not isinstance(rows, dict):
    return {'text': rows[i]}
  return {'inputs': {n: values[i] for n, values in sorted(rows.items())}}


def _warn_unknown(rows, unknown, checked):
  what = 'text' if not isinstance(rows, dict) else 'row'
  for n, (missing, total) in enumerate(zip(unknown, checked), 1):
    if missing:
      print(f'warning: {what} {n}: {len(missing)} of {total} tokens not in '
            f'the vocabulary (zero vectors): {" ".join(missing[:10])}'
            + (' ...' if len(missing) > 10 else '') + '; tokens are '
            'case-sensitive', file=sys.stderr)


def run_embed(args) -> int:
  root = arguments.root_from_args(args)
  version, model = consumer.load_serving(root, args.version)
  rows = _embed_rows(args, declared.signature(model, args.signature))
  _, vectors = consumer.embed(root, rows, version=version, loaded=model,
                              signature=args.signature)
  _, unknown, checked = consumer.token_check(
      root, rows, version=version, loaded=model, signature=args.signature)
  if args.json:
    print(json.dumps({'version': version, 'embeddings': [
        {**_row_json(rows, i), 'vector': [float(x) for x in row],
         'unknown_tokens': u}
        for i, (row, u) in enumerate(zip(vectors, unknown))]}))
    return 0
  print(f'pushed version {version}, dim {vectors.shape[1]}', file=sys.stderr)
  _warn_unknown(rows, unknown, checked)
  for label, row in zip(_row_labels(rows), vectors):
    print(label + '\t' + ' '.join(f'{x:.6f}' for x in row))
  return 0


# -- neighbors: the nearest tokens (or ids) of one in a pushed version.

def _register_neighbors(sub):
  p = sub.add_parser('neighbors', help='nearest tokens by cosine similarity, '
                     'from a model that declares a neighbors signature')
  arguments.add_root_arguments(p)
  p.add_argument('--version', help='pushed version (default: the latest)')
  p.add_argument('-k', type=int, default=10, help='how many (default 10)')
  p.add_argument('--json', action='store_true', help='print JSON')
  p.add_argument('token', help='the query: one token, or an integer id when '
                 'the signature takes ids')
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
  print(f'version {result.manifests[SERVING.name]["rollback_of"]} re-published '
        f'as version {result.version} (now served) under {root}')
  return 0
