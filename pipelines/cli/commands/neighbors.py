"""`neighbors`: the nearest tokens of one token in a pushed version."""

import json
import sys

from tpu_embeddings.push_root import consumer


def register(sub):
  p = sub.add_parser('neighbors', help='nearest tokens by cosine similarity')
  consumer.add_root_arguments(p)
  p.add_argument('--version', help='pushed version (default: the latest)')
  p.add_argument('-k', type=int, default=10, help='how many (default 10)')
  p.add_argument('--json', action='store_true', help='print JSON')
  p.add_argument('token', help='the query token (one word)')
  p.set_defaults(func=run)


def run(args) -> int:
  root = consumer.root_from_args(args)
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
