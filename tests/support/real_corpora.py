"""Real corpora for validator tests: gensim's texts and the item corpus.

Each is cut to about `MAX_TOKENS` tokens so a test stays in seconds; every
tenth line is held out as the eval split, the rest is the train split.
"""

import collections
from typing import Dict, List, Tuple

from benchmarks import interaction_corpus
from benchmarks import text_corpora

MAX_TOKENS = 60_000
MIN_COUNT = 5  # the Vocabulary default
NAMES = ('lee', 'head500', 'enwiki', 'items')


def _item_lines(out_dir: str) -> List[List[str]]:
  corpus = interaction_corpus.generate(
      out_dir, interaction_corpus.Shape(sequences=400, items=5_000))
  with open(corpus.corpus_file, encoding='utf-8') as f:
    return [line.split() for line in f]


def lines(name: str, out_dir: str) -> List[List[str]]:
  """Up to MAX_TOKENS tokens of corpus `name`, one sequence per line."""
  if name == 'items':
    source = iter(_item_lines(out_dir))
  else:
    source = text_corpora.split_lines(text_corpora.CORPORA[name]())
  out, total = [], 0
  for line in source:
    if total >= MAX_TOKENS:
      break
    if line:
      out.append(line)
      total += len(line)
  return out


def splits(name: str, out_dir: str
           ) -> Tuple[Dict[str, List[List[str]]], Dict[str, int]]:
  """({'train': ..., 'eval': ...}, train token counts of at least
  MIN_COUNT)."""
  all_lines = lines(name, out_dir)
  train = [l for i, l in enumerate(all_lines) if i % 10]
  eval_ = [l for i, l in enumerate(all_lines) if not i % 10]
  counts = collections.Counter(t for l in train for t in l)
  return ({'train': train, 'eval': eval_},
          {t: c for t, c in counts.items() if c >= MIN_COUNT})
