"""The benchmark corpus and the quality metrics both trainers are scored by."""

import numpy as np

from benchmarks import embedding_quality as quality
from benchmarks import interaction_corpus


def _table_by_category(categories, dim=8, noise=0.0, seed=0):
  """One direction per category: a perfect table for category precision."""
  rng = np.random.default_rng(seed)
  centers = rng.normal(size=(max(categories.values()) + 1, dim))
  tokens = sorted(categories)
  vectors = np.stack([centers[categories[t]] for t in tokens])
  return quality.Table(tokens, vectors + noise * rng.normal(size=vectors.shape))


def test_corpus_shape(tmp_path):
  shape = interaction_corpus.Shape(items=500, categories=10, sequences=50,
                                   min_length=20, max_length=60)
  corpus = interaction_corpus.generate(str(tmp_path), shape)
  with open(corpus.corpus_file) as f:
    lines = [l.split() for l in f]
  assert len(lines) == len(corpus.heldout) == 50
  assert all(20 <= len(l) <= 60 for l in lines)
  assert sum(map(len, lines)) == corpus.events
  assert all(q == l[-5:] for (q, _), l in zip(corpus.heldout, lines))
  assert len(corpus.categories) == 500
  # Sessions stay in a category: neighbours share it far above chance (0.1).
  same = [corpus.categories[a] == corpus.categories[b]
          for l in lines for a, b in zip(l, l[1:])]
  assert np.mean(same) > 0.5


def test_category_precision_separates_good_and_random_tables():
  categories = {f'i{i}': i % 5 for i in range(200)}
  items = sorted(categories)[:50]
  good = _table_by_category(categories, noise=0.01)
  rng = np.random.default_rng(1)
  random = quality.Table(sorted(categories), rng.normal(size=(200, 8)))
  assert quality.category_precision(good, categories, items) > 0.99
  assert quality.category_precision(random, categories, items) < 0.5


def test_hit_rate_counts_missing_tokens_as_misses():
  tokens = ['a', 'b', 'c', 'd']
  table = quality.Table(tokens, np.eye(4) + 0.1)
  # Context 'a' excluded from its own results; k=1 neighbour of 'a' is tied,
  # so use k=3: every other token is found.
  heldout = [(['a'], 'b'), (['a'], 'zzz'), (['zzz'], 'b')]
  assert quality.hit_rate(table, heldout, k=3) == 1 / 3


def test_hit_rate_is_the_share_of_targets_in_the_full_ranking_top_k():
  rng = np.random.default_rng(3)
  tokens = [f'i{i}' for i in range(300)]
  table = quality.Table(tokens, rng.normal(size=(300, 16)))
  heldout = []
  for _ in range(700):
    picked = rng.choice(300, size=4, replace=False)
    heldout.append(([tokens[i] for i in picked[:3]], tokens[picked[3]]))
  for k in (1, 10, 50):
    hits = 0
    for context, target in heldout:
      ids = [table.ids[t] for t in context]
      scores = table.unit @ table.unit[ids].mean(axis=0)
      ranked = [i for i in np.argsort(-scores, kind='stable')
                if i not in ids]
      hits += table.ids[target] in ranked[:k]
    assert quality.hit_rate(table, heldout, k=k, batch=64) == hits / 700
