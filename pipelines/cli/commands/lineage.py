"""`lineage`: which model, examples and span a pushed version came from."""

import json


def register(sub):
  p = sub.add_parser('lineage', help='pushed version -> model -> examples -> '
                     'span, from ML Metadata')
  p.add_argument('--home', required=True,
                 help='pipeline home of `run` (reads its metadata.sqlite)')
  p.add_argument('--version', type=int, help='pushed version (default latest)')
  p.add_argument('--json', action='store_true', help='print JSON')
  p.set_defaults(func=run)


def run(args) -> int:
  from pipelines.local import lineage  # pylint: disable=g-import-not-at-top
  result = lineage.lineage(args.home, args.version)
  print(json.dumps(result, indent=2) if args.json else
        lineage.format_lineage(result))
  return 0
