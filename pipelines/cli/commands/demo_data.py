"""`demo-data`: write the synthetic demo corpus."""

import os

from pipelines import demo_data


def register(sub):
  p = sub.add_parser('demo-data', help='write a synthetic demo corpus')
  p.add_argument('--out', required=True, help='output directory')
  p.add_argument('--spans', type=int, default=2, help='number of spans')
  p.add_argument('--first-span', type=int, default=1,
                 help='number of the first span written (to add spans later)')
  p.add_argument('--seed', type=int, default=0,
                 help='random seed; the same seed writes the same corpus '
                 '(default 0)')
  p.add_argument('--lines-per-span', type=int,
                 default=demo_data.CorpusShape.lines_per_span,
                 help='sentences per span (default '
                 f'{demo_data.CorpusShape.lines_per_span})')
  p.set_defaults(func=run)


def run(args) -> int:
  shape = demo_data.CorpusShape(lines_per_span=args.lines_per_span)
  demo_data.generate(args.out, spans=args.spans, seed=args.seed,
                     first_span=args.first_span, shape=shape)
  spans = range(args.first_span, args.first_span + args.spans)
  print(f'wrote spans {", ".join(map(str, spans))} '
        f'({shape.lines_per_span} lines each) and '
        f'{os.path.join(args.out, demo_data.RELATED_PAIRS_FILENAME)}')
  return 0
