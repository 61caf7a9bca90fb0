"""Generated user-item interactions, for recommendation models and demos.

Items have Zipf popularity and one latent category each; a user has a few
favourite categories and browses in sessions that mostly stay in one
category, drawing items by popularity within it, with some globally popular
items mixed in. Sequence lengths are log-uniform in [min_length,
max_length]; each sequence ends with one more item, held out for evaluation.

`write_examples` turns them into the Examples a two-tower retrieval model
trains on, one record per interaction (`user_id`, `history`: the user's
previous HISTORY items, `item_id`, `item_category`), as files that stock
ExampleGens read, one span folder each:

    <out>/span-1/train/part-00000.csv    every interaction but the last
    <out>/span-1/eval/part-00000.csv     each user's held-out last item
    (or .tfrecord.gz files of tf.Examples: ImportExampleGen's input)
"""

import csv
import dataclasses
import os
from typing import Dict, List, Sequence, Tuple

import numpy as np

from components.keys import EVAL_SPLIT
from components.keys import TRAIN_SPLIT

HISTORY = 5  # previous items of a user in `history`
FEATURES = ('user_id', 'history', 'item_id', 'item_category')
FORMATS = ('csv', 'tfrecord')


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


# The shape of the two-tower example: small enough to train in seconds.
EXAMPLE_SHAPE = Shape(items=2000, categories=40, sequences=1500,
                      min_length=20, max_length=60)


def sequences(shape: Shape) -> Tuple[List[np.ndarray], np.ndarray]:
  """(each user's item ids, the held-out one last; each item's category)."""
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
  found = []
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
    found.append(items)
  return found, category


def item(i: int) -> str:
  return f'i{i}'


def _row(user: int, items: np.ndarray, t: int,
         category: np.ndarray) -> Dict[str, str]:
  return {'user_id': f'u{user}',
          'history': ' '.join(item(i) for i in items[max(0, t - HISTORY):t]),
          'item_id': item(items[t]),
          'item_category': f'c{category[items[t]]}'}


def rows(shape: Shape) -> Dict[str, List[Dict[str, str]]]:
  """{TRAIN_SPLIT: [...], EVAL_SPLIT: [...]}: one row per interaction
  after a user's first; eval holds each user's held-out last one."""
  users, category = sequences(shape)
  split = {TRAIN_SPLIT: [], EVAL_SPLIT: []}
  for user, items in enumerate(users):
    split[TRAIN_SPLIT] += [_row(user, items, t, category)
                           for t in range(1, len(items) - 1)]
    split[EVAL_SPLIT].append(_row(user, items, len(items) - 1, category))
  return split


def _write_csv(path: str, records: Sequence[Dict[str, str]]):
  with open(path, 'w', encoding='utf-8', newline='') as f:
    writer = csv.DictWriter(f, fieldnames=FEATURES)
    writer.writeheader()
    writer.writerows(records)


def _write_tfrecord(path: str, records: Sequence[Dict[str, str]]):
  import tensorflow as tf
  options = tf.io.TFRecordOptions(compression_type='GZIP')
  with tf.io.TFRecordWriter(path, options) as writer:
    for record in records:
      writer.write(tf.train.Example(features=tf.train.Features(feature={
          k: tf.train.Feature(bytes_list=tf.train.BytesList(
              value=[v.encode('utf-8')])) for k, v in record.items()
      })).SerializeToString())


def write_examples(out_dir: str, shape: Shape = EXAMPLE_SHAPE,
                   span: int = 1, file_format: str = 'csv') -> Dict[str, str]:
  """Writes one span of interactions; {split: file written}."""
  if file_format not in FORMATS:
    raise ValueError(f'interactions: format must be one of {FORMATS}, got '
                     f'{file_format!r}')
  written = {}
  for split, records in rows(shape).items():
    directory = os.path.join(out_dir, f'span-{span}', split)
    os.makedirs(directory, exist_ok=True)
    name = 'part-00000.csv' if file_format == 'csv' else (
        'part-00000.tfrecord.gz')
    path = os.path.join(directory, name)
    (_write_csv if file_format == 'csv' else _write_tfrecord)(path, records)
    written[split] = path
  return written
