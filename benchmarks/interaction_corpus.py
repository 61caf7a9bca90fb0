"""A generated corpus that looks like user-item interaction logs.

The interactions of `pipelines.demo_interactions` (Zipf item popularity, one
latent category per item, users browsing in sessions that mostly stay in one
of their favourite categories), written as text sequences. The last item of
every sequence is held out (not written to the corpus): the next-item target
of `quality.hit_rate`.

    <out>/span-1/part-00000.txt   one sequence per line, items `i<id>`
    <out>/heldout.tsv             "<last 5 written items>\t<held-out item>"
    <out>/categories.tsv          "<item>\t<category>"
"""

import dataclasses
import os
from typing import Dict, List, Optional, Tuple

import numpy as np

from pipelines import demo_interactions
from pipelines.demo_interactions import Shape
from pipelines.demo_interactions import item as _item

QUERY_ITEMS = 5  # items averaged into a next-item query


@dataclasses.dataclass(frozen=True)
class Corpus:
  data_root: str
  corpus_file: str
  heldout: List[Tuple[List[str], str]]
  categories: Dict[str, int]
  events: int
  bytes: int


def _sequences(shape: Shape) -> List[np.ndarray]:
  users, category = demo_interactions.sequences(shape)
  return users + [category]  # last: the category of every item


def generate(out_dir: str, shape: Optional[Shape] = None) -> Corpus:
  """Writes the corpus, the held-out items and the categories (default
  shape: `Shape()`)."""
  shape = shape or Shape()
  *sequences, category = _sequences(shape)
  span = os.path.join(out_dir, 'span-1')
  os.makedirs(span, exist_ok=True)
  corpus_file = os.path.join(span, 'part-00000.txt')
  heldout = []
  events = 0
  with open(corpus_file, 'w', encoding='utf-8') as f:
    for items in sequences:
      written = [_item(i) for i in items[:-1]]
      events += len(written)
      f.write(' '.join(written) + '\n')
      heldout.append((written[-QUERY_ITEMS:], _item(items[-1])))
  with open(os.path.join(out_dir, 'heldout.tsv'), 'w', encoding='utf-8') as f:
    f.writelines(f'{" ".join(q)}\t{t}\n' for q, t in heldout)
  categories = {_item(i): int(c) for i, c in enumerate(category)}
  with open(os.path.join(out_dir, 'categories.tsv'), 'w',
            encoding='utf-8') as f:
    f.writelines(f'{t}\t{c}\n' for t, c in categories.items())
  return Corpus(out_dir, corpus_file, heldout, categories, events,
                os.path.getsize(corpus_file))
