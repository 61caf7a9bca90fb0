"""Command-line arguments the corpus benchmarks share: named input files and
the passes-to-quality options."""

import os
from typing import Dict, Iterable


def named_files(given: Iterable[str], option: str) -> Dict[str, str]:
  """{name: path} of the "NAME=PATH" values of `option`, each naming a
  readable file; ValueError naming the value otherwise."""
  files = {}
  for item in given:
    name, _, path = item.partition('=')
    if not name or not path:
      raise ValueError(f'{option} {item!r}: expected NAME=PATH')
    if not os.path.isfile(path):
      raise ValueError(f'{option} {item!r}: no file {path}')
    files[name] = path
  return files


def add_passes(parser, tolerance: float, tolerance_help: str):
  """`--epochs`, `--tolerance` and `--set`, as every corpus benchmark reads
  them."""
  parser.add_argument('--epochs', default='',
                      help='passes to run the pipeline again at (e.g. '
                      '1,2,3), for its time to gensim quality')
  parser.add_argument('--tolerance', type=float, default=tolerance,
                      help=tolerance_help)
  parser.add_argument('--set', action='append', default=[],
                      metavar='KEY=VALUE',
                      help='a pipeline setting for every run (e.g. '
                      'trainer.epochs=3); repeatable')
