"""Quality of an item table, computed the same way for every trainer.

* `hit_rate`: next-item hit rate@k. The query is the mean of the unit
  vectors of the last items of a sequence; the k nearest items by cosine
  (the query items left out) should hold the held-out next item.
* `category_precision`: for sampled items, the share of their k nearest
  neighbours (by cosine, the item itself left out) in the same category.
* `standard_error`: how far a figure moves with the sample it is judged on.

A token missing from a table counts as a miss, so tables with a smaller
vocabulary are not favoured.
"""

import math
from typing import Dict, List, Sequence, Tuple

import numpy as np


class Table:
  """Unit-normalized rows and the token of each row."""

  def __init__(self, tokens: Sequence[str], vectors: np.ndarray):
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    self.tokens = list(tokens)
    self.unit = vectors / np.maximum(norms, 1e-12)
    self.ids = {t: i for i, t in enumerate(self.tokens)}

  def scores(self, queries: np.ndarray,
             exclude: List[List[int]]) -> np.ndarray:
    """[queries, rows] cosines, -inf at each query's `exclude` rows."""
    scores = queries @ self.unit.T
    for row, ids in enumerate(exclude):
      scores[row, ids] = -np.inf
    return scores

  def top_k(self, queries: np.ndarray, exclude: List[List[int]],
            k: int) -> np.ndarray:
    return np.argpartition(-self.scores(queries, exclude), k, axis=1)[:, :k]


def hit_rate(table: Table, heldout: Sequence[Tuple[List[str], str]],
             k: int = 10, batch: int = 512) -> float:
  """Share of `heldout` (query items, next item) whose next item is among
  the k items nearest the query, the query items left out.

  The target's rank is counted, not the k nearest found: a hit is fewer
  than k items scoring strictly above it (a tie goes to the target). A
  comparison per item instead of a partial sort per query, so a table of
  tens of thousands of items scores 100k+ queries in seconds."""
  hits = 0
  for start in range(0, len(heldout), batch):
    chunk = heldout[start:start + batch]
    queries, exclude, targets = [], [], []
    for context, target in chunk:
      ids = [table.ids[t] for t in context if t in table.ids]
      if not ids or target not in table.ids:
        continue
      queries.append(table.unit[ids].mean(axis=0))
      exclude.append(ids)
      targets.append(table.ids[target])
    if not queries:
      continue
    scores = table.scores(np.stack(queries), exclude)
    target_scores = scores[np.arange(len(targets)), targets]
    above = (scores > target_scores[:, None]).sum(axis=1)
    hits += int(((above < k) & np.isfinite(target_scores)).sum())
  return hits / max(1, len(heldout))


def category_precision(table: Table, categories: Dict[str, int],
                       items: Sequence[str], k: int = 10,
                       batch: int = 512) -> float:
  """Mean same-category share of the k neighbours of each of `items`."""
  row_category = np.array([categories.get(t, -1) for t in table.tokens])
  total = 0.0
  for start in range(0, len(items), batch):
    chunk = [t for t in items[start:start + batch] if t in table.ids]
    if not chunk:
      continue
    ids = [table.ids[t] for t in chunk]
    top = table.top_k(table.unit[ids], [[i] for i in ids], k)
    same = row_category[top] == row_category[ids][:, None]
    total += float(same.mean(axis=1).sum())
  return total / max(1, len(items))


def query_items(counts: Dict[str, int], n: int, min_count: int = 5,
                seed: int = 0) -> List[str]:
  """`n` items sampled uniformly among those seen at least `min_count` times
  (n = 0: all of them)."""
  frequent = sorted(t for t, c in counts.items() if c >= min_count)
  rng = np.random.default_rng(seed)
  if not n or len(frequent) <= n:
    return frequent
  return [frequent[i] for i in sorted(rng.choice(len(frequent), n,
                                                 replace=False))]


def standard_error(value: float, n: int, correlation: bool = False) -> float:
  """The sampling standard error of a figure judged on `n` items: a
  proportion's binomial one (for a mean of shares in [0, 1], as category
  P@10, an upper bound), or a Spearman correlation's (Fisher's z,
  1.03 / sqrt(n - 3), taken back to the correlation's scale)."""
  if n <= 3:
    return float('nan')
  if correlation:
    return (1.0 - value * value) * 1.03 / math.sqrt(n - 3)
  return math.sqrt(max(value * (1.0 - value), 0.0) / n)
