"""A generated corpus that looks like user-item interaction logs.

Items have Zipf popularity and one latent category each; a user has a few
favourite categories and browses in sessions that mostly stay in one
category, drawing items by popularity within it, with some globally popular
items mixed in. Sequence lengths are log-uniform in [min_length, max_length].
The last item of every sequence is held out (not written to the corpus): the
next-item target of `quality.hit_rate`.

    <out>/span-1/part-00000.txt   one sequence per line, items `i<id>`
    <out>/heldout.tsv             "<last 5 written items>\t<held-out item>"
    <out>/categories.tsv          "<item>\t<category>"
"""

import dataclasses
import os
from typing import Dict, List, Tuple

import numpy as np

QUERY_ITEMS = 5  # items averaged into a next-item query


@dataclasses.dataclass(frozen=True)
class Shape:
  items: int = 50_000
  categories: int = 200
  sequences: int = 2_000
  min_length: int = 20
  max_length: int = 500
  zipf: float = 1.0
  stay: float = 0.9  # chance the next item keeps the session's category
  popular_mix: float = 0.1  # chance of a globally popular item instead
  tastes: int = 3  # favourite categories per user
  seed: int = 0


@dataclasses.dataclass(frozen=True)
class Corpus:
  data_root: str
  corpus_file: str
  heldout: List[Tuple[List[str], str]]
  categories: Dict[str, int]
  events: int
  bytes: int


def _item(i: int) -> str:
  return f'i{i}'


def _sequences(shape: Shape) -> List[np.ndarray]:
  rng = np.random.default_rng(shape.seed)
  popularity = 1.0 / np.arange(1, shape.items + 1) ** shape.zipf
  category = rng.integers(0, shape.categories, shape.items)
  members = [np.flatnonzero(category == c) for c in range(shape.categories)]
  cumulative = [np.cumsum(popularity[m]) for m in members]
  global_cumulative = np.cumsum(popularity)
  category_weight = np.array([popularity[m].sum() for m in members])
  category_weight /= category_weight.sum()
  lengths = np.exp(rng.uniform(np.log(shape.min_length),
                               np.log(shape.max_length + 1),
                               shape.sequences)).astype(int)
  sequences = []
  for n in np.minimum(lengths, shape.max_length) + 1:  # +1: held-out item
    tastes = rng.choice(shape.categories, shape.tastes, p=category_weight)
    segment = np.cumsum(rng.random(n) > shape.stay)
    session_category = tastes[rng.integers(0, shape.tastes,
                                           segment[-1] + 1)][segment]
    items = np.empty(n, dtype=np.int64)
    for c in np.unique(session_category):
      at = np.flatnonzero(session_category == c)
      cum = cumulative[c]
      items[at] = members[c][np.searchsorted(
          cum, rng.random(at.size) * cum[-1])]
    popular = rng.random(n) < shape.popular_mix
    items[popular] = np.searchsorted(
        global_cumulative,
        rng.random(popular.sum()) * global_cumulative[-1])
    sequences.append(items)
  sequences.append(category)  # last: the category of every item
  return sequences


def generate(out_dir: str, shape: Shape = Shape()) -> Corpus:
  """Writes the corpus, the held-out items and the categories."""
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
