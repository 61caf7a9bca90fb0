"""Generated ratings, for the rating example (examples/rating).

Users and items have Zipf popularity, a bias each and a few latent tastes;
a rating is the global mean plus both biases plus the tastes' dot product
plus noise, rounded to a star in 1..5 (as MovieLens's `u.data`: user, item,
rating, timestamp). The last ratings in time are held out.

`write_examples` writes them as CsvExampleGen reads them, one span folder
each: integer `user_id` and `item_id` columns (int64 in the Examples) and a
float `rating` column ("4.0", a float in the Examples):

    <out>/span-1/train/part-00000.csv    the first 90% of ratings in time
    <out>/span-1/eval/part-00000.csv     the rest
"""

import csv
import dataclasses
import os
from typing import Dict

import numpy as np

from components.keys import EVAL_SPLIT
from components.keys import TRAIN_SPLIT

COLUMNS = ('user_id', 'item_id', 'rating')


@dataclasses.dataclass(frozen=True)
class Shape:
  users: int = 600
  items: int = 400
  ratings: int = 30_000
  tastes: int = 4
  mean: float = 3.5
  noise: float = 0.8
  eval_fraction: float = 0.1
  seed: int = 0


def ratings(shape: Shape) -> np.ndarray:
  """[N, 4] int64 rows (user, item, stars, time), in time order; ids
  count from 1, as MovieLens's do."""
  rng = np.random.default_rng(shape.seed)
  user = _zipf_draws(rng, shape.users, shape.ratings)
  item = _zipf_draws(rng, shape.items, shape.ratings)
  scale = 0.6 / np.sqrt(shape.tastes)
  taste_u = rng.normal(0, scale, [shape.users, shape.tastes])
  taste_i = rng.normal(0, scale * 1.5, [shape.items, shape.tastes])
  value = (shape.mean + rng.normal(0, 0.35, shape.users)[user] +
           rng.normal(0, 0.5, shape.items)[item] +
           np.sum(taste_u[user] * taste_i[item], axis=1) +
           rng.normal(0, shape.noise, shape.ratings))
  stars = np.clip(np.rint(value), 1, 5).astype(np.int64)
  return np.stack([user + 1, item + 1, stars,
                   np.arange(shape.ratings, dtype=np.int64)], axis=1)


def _zipf_draws(rng, n: int, size: int) -> np.ndarray:
  weight = 1.0 / np.arange(1, n + 1) ** 0.8
  return rng.permutation(n)[rng.choice(n, size, p=weight / weight.sum())]


def time_split(rows: np.ndarray, eval_fraction: float
               ) -> Dict[str, np.ndarray]:
  """{TRAIN_SPLIT: the first rows in time, EVAL_SPLIT: the last
  `eval_fraction` of them}."""
  rows = rows[np.argsort(rows[:, 3], kind='stable')]
  cut = int(round(len(rows) * (1 - eval_fraction)))
  return {TRAIN_SPLIT: rows[:cut], EVAL_SPLIT: rows[cut:]}


def write_csv(path: str, rows: np.ndarray):
  """user_id,item_id,rating rows, the rating with a decimal point."""
  with open(path, 'w', encoding='utf-8', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(COLUMNS)
    writer.writerows((int(u), int(i), f'{float(r):.1f}')
                     for u, i, r, _ in rows)


def write_examples(out_dir: str, shape: Shape = Shape(),
                   span: int = 1) -> Dict[str, str]:
  """Writes one pre-split span of ratings; {split: file written}."""
  written = {}
  for split, rows in time_split(ratings(shape), shape.eval_fraction).items():
    directory = os.path.join(out_dir, f'span-{span}', split)
    os.makedirs(directory, exist_ok=True)
    written[split] = os.path.join(directory, 'part-00000.csv')
    write_csv(written[split], rows)
  return written
