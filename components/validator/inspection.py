"""What a person looks at to judge a table: neighbours, buckets, a map.

Computed for the candidate and the pushed baseline alike, on tables aligned to
the evaluation vocabulary (rows in count order, most frequent first):

* the nearest neighbours of a few frequent, mid and rare tokens;
* recall@k of the held-out pairs by frequency bucket of the target (the
  vocabulary's thirds by rank), next to the popularity ranking's;
* a 2-D map (PCA) of the most frequent tokens.
"""

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from components.validator import metrics

BUCKETS = ('frequent', 'mid', 'rare')
QUERIES_PER_BUCKET = 4
NEIGHBOURS = 8
MAP_TOKENS = 150


def bucket_of(rows: np.ndarray, vocabulary_size: int) -> np.ndarray:
  """0, 1 or 2: the third of the vocabulary (by count rank) of each row."""
  return np.minimum(3 * rows // max(vocabulary_size, 1), 2)


def query_tokens(tokens: Sequence[str], table: np.ndarray) -> Dict[str, List]:
  """A few known tokens evenly spread over each third of the vocabulary."""
  known = np.flatnonzero(metrics.row_norms(table) > metrics.ZERO_NORM)
  third = bucket_of(known, len(tokens))
  out = {}
  for b, name in enumerate(BUCKETS):
    rows = known[third == b]
    picks = rows[np.linspace(0, rows.size - 1, QUERIES_PER_BUCKET).astype(int)
                 ] if rows.size else []
    out[name] = sorted({int(r) for r in picks})
  return out


def neighbours(table: np.ndarray, tokens: Sequence[str], row: int,
               k: int = NEIGHBOURS) -> List[List[Any]]:
  """[[token, cosine], ...] of the k nearest other known rows of `row`."""
  norms = np.maximum(metrics.row_norms(table), metrics.ZERO_NORM)
  unit = table / norms[:, None]
  if not np.any(unit[row]):
    return []
  scores = unit @ unit[row]
  scores[row] = -np.inf
  scores[~np.any(unit, axis=1)] = -np.inf
  top = np.argsort(-scores)[:k]
  return [[tokens[i], round(float(scores[i]), 3)] for i in top
          if np.isfinite(scores[i])]


def by_frequency(tables: Dict[str, np.ndarray], targets: np.ndarray,
                 contexts: np.ndarray, k: int) -> List[Dict[str, Any]]:
  """recall@k of each model and of the popularity ranking, per bucket of the
  target's frequency."""
  size = next(iter(tables.values())).shape[0]
  third = bucket_of(targets, size)
  out = []
  for b, name in enumerate(BUCKETS):
    q, a = targets[third == b], contexts[third == b]
    row = {'bucket': name, 'pairs': int(q.size),
           'popularity': metrics.popularity_recall_at_k(q, a, k)}
    for role, table in tables.items():
      row[role] = metrics.recall_at_k(table, q, a, k) if q.size else None
    out.append(row)
  return out


def pca_map(table: np.ndarray, tokens: Sequence[str],
            n: int = MAP_TOKENS) -> Dict[str, Any]:
  """The first two principal components of the `n` most frequent known rows
  (unit length, centred)."""
  known = np.flatnonzero(metrics.row_norms(table) > metrics.ZERO_NORM)[:n]
  if known.size < 3:
    return {'tokens': [], 'xy': []}
  rows = table[known].astype(np.float64)
  rows /= metrics.row_norms(rows)[:, None]
  rows -= rows.mean(axis=0)
  _, _, vt = np.linalg.svd(rows, full_matrices=False)
  xy = rows @ vt[:2].T
  return {'tokens': [tokens[i] for i in known],
          'xy': [[round(float(x), 4), round(float(y), 4)] for x, y in xy]}


def inspect(tokens: Sequence[str], candidate: np.ndarray,
            baseline: Optional[np.ndarray], targets: np.ndarray,
            contexts: np.ndarray, k: int) -> Dict[str, Any]:
  """The report's people section; tables aligned to `tokens` (a non-finite
  value counts as 0)."""
  tables = {'candidate': candidate}
  if baseline is not None:
    tables['baseline'] = baseline
  tables = {role: np.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0)
            for role, t in tables.items()}
  candidate = tables['candidate']
  queries = query_tokens(tokens, candidate)
  return {
      'neighbours': {
          bucket: [{'token': tokens[r],
                    **{role: neighbours(t, tokens, r)
                       for role, t in tables.items()}}
                   for r in rows]
          for bucket, rows in queries.items()},
      'by_frequency': by_frequency(tables, targets, contexts, k),
      'map': pca_map(candidate, tokens),
  }
