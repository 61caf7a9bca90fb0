"""Commands on what was pushed: pushed (pushed_command.py), embed,
neighbors, rollback.

They read only the push root (TensorFlow, no TFX).
"""

import json
import sys

from pipelines.cli import arguments
from pipelines.cli import pushed_command
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts.export_kinds import SERVING
from tpu_embeddings.core import import_gc
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import declared


def register(sub):
  pushed_command.register(sub)
  _register_embed(sub)
  _register_neighbors(sub)
  _register_rollback(sub)


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


def _import_tensorflow():
  """The consumer API's TensorFlow, imported first here with the garbage
  collector paused (`import_gc`): most of a lookup command's time."""
  with import_gc.paused():
    import tensorflow  # noqa: F401


def run_embed(args) -> int:
  root = arguments.root_from_args(args)
  _import_tensorflow()
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
  _import_tensorflow()
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
