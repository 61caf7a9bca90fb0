"""`embed`: sentence vectors from the latest (or a given) pushed version."""

import json
import sys

from tpu_embeddings.push_root import consumer


def register(sub):
  p = sub.add_parser('embed', help='sentence vectors from a pushed version')
  consumer.add_root_arguments(p)
  p.add_argument('--version', help='pushed version (default: the latest)')
  p.add_argument('--json', action='store_true', help='print JSON')
  p.add_argument('sentences', nargs='+', metavar='TEXT',
                 help='sentences to embed, one argument each')
  p.set_defaults(func=run)


def run(args) -> int:
  root = consumer.root_from_args(args)
  version, vectors = consumer.embed(root, args.sentences, version=args.version)
  if args.json:
    print(json.dumps({'version': version, 'embeddings': [
        {'text': s, 'vector': [float(x) for x in row]}
        for s, row in zip(args.sentences, vectors)]}))
    return 0
  print(f'pushed version {version}, dim {vectors.shape[1]}', file=sys.stderr)
  for sentence, row in zip(args.sentences, vectors):
    print(sentence + '\t' + ' '.join(f'{x:.6f}' for x in row))
  return 0
