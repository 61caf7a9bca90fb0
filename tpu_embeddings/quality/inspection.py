"""What a person looks at to judge a table: neighbours, buckets, a map.

Computed for the candidate and the pushed baseline alike, on tables whose
rows follow one vocabulary (rows in count order, most frequent first):

* the nearest neighbours of a few frequent, mid and rare tokens;
* recall@k of held-out pairs by frequency bucket of the target (the
  vocabulary's thirds by rank), next to the popularity ranking's;
* a 2-D map (PCA) of the most frequent tokens.
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from tpu_embeddings.quality import metrics
from tpu_embeddings.quality import table_scan

BUCKETS = ('frequent', 'mid', 'rare')
QUERIES_PER_BUCKET = 4
NEIGHBOURS = 8
MAP_TOKENS = 150


def bucket_of(rows: np.ndarray, vocabulary_size: int) -> np.ndarray:
  """0, 1 or 2: the third of the vocabulary (by count rank) of each row."""
  return np.minimum(3 * rows // max(vocabulary_size, 1), 2)


def query_tokens(tokens: Sequence[str], table: np.ndarray) -> Dict[str, List]:
  """A few known tokens evenly spread over each third of the vocabulary."""
  known = table_scan.known_rows(table)
  third = bucket_of(known, len(tokens))
  out = {}
  for b, name in enumerate(BUCKETS):
    rows = known[third == b]
    picks = rows[np.linspace(0, rows.size - 1, QUERIES_PER_BUCKET).astype(int)
                 ] if rows.size else []
    out[name] = sorted({int(r) for r in picks})
  return out


def neighbour_lists(table: np.ndarray, tokens: Sequence[str],
                    rows: Sequence[int], k: int = NEIGHBOURS
                    ) -> List[List[List[Any]]]:
  """`neighbours` of each of `rows`, in one pass over the table."""
  rows = np.asarray(rows, np.int64)
  if not rows.size:
    return []
  query, known = table_scan.unit_rows(table[rows])
  found, scores = table_scan.best_rows(table, query, k, left_out=[rows])
  return [[[tokens[int(i)], round(float(s), 3)]
           for i, s in zip(found[q], scores[q]) if i >= 0] if known[q] else []
          for q in range(rows.size)]


def neighbours(table: np.ndarray, tokens: Sequence[str], row: int,
               k: int = NEIGHBOURS) -> List[List[Any]]:
  """[[token, cosine], ...] of the k nearest other known rows of `row`
  (none for an unknown row); equal cosines in row order."""
  return neighbour_lists(table, tokens, [row], k)[0]


def by_frequency(tables: Dict[str, np.ndarray], targets: np.ndarray,
                 contexts: np.ndarray, k: int,
                 hits: Optional[Mapping[str, np.ndarray]] = None
                 ) -> List[Dict[str, Any]]:
  """recall@k of each model and of the popularity ranking, per bucket of the
  target's frequency. `hits[role]`: that table's `metrics.recall_hits` on
  the pairs with target != context, if already known."""
  size = next(iter(tables.values())).shape[0]
  third = bucket_of(targets, size)
  distinct = targets != contexts
  found = {}
  for role, table in tables.items():
    found[role] = np.zeros(targets.shape, bool)
    if (hits or {}).get(role) is not None:
      found[role][distinct] = hits[role]
    elif distinct.any():
      found[role][distinct] = metrics.recall_hits(
          table, targets[distinct], contexts[distinct], k)
  out = []
  for b, name in enumerate(BUCKETS):
    q, a = targets[third == b], contexts[third == b]
    scored = (third == b) & distinct
    row = {'bucket': name, 'pairs': int(q.size),
           'popularity': metrics.popularity_recall_at_k(q, a, k)}
    for role in tables:
      row[role] = (int(found[role][scored].sum()) / int(scored.sum())
                   if scored.any() else None)
    out.append(row)
  return out


def pca_map(table: np.ndarray, tokens: Sequence[str],
            n: int = MAP_TOKENS) -> Dict[str, Any]:
  """The first two principal components of the `n` most frequent known rows
  (unit length, centred; non-finite values read as 0)."""
  known = table_scan.known_rows(table)[:n]
  if known.size < 3:
    return {'tokens': [], 'xy': []}
  rows = np.nan_to_num(table[known].astype(np.float64), nan=0.0, posinf=0.0,
                       neginf=0.0)
  rows /= metrics.row_norms(rows)[:, None]
  rows -= rows.mean(axis=0)
  _, _, vt = np.linalg.svd(rows, full_matrices=False)
  xy = rows @ vt[:2].T
  return {'tokens': [tokens[i] for i in known],
          'xy': [[round(float(x), 4), round(float(y), 4)] for x, y in xy]}


def neighbours_by_bucket(tokens: Sequence[str],
                         tables: Mapping[str, np.ndarray]
                         ) -> Dict[str, List[Dict[str, Any]]]:
  """{bucket: [{'token', <role>: neighbours}]} of a few tokens of each
  frequency third, known to the first of `tables` ({role: rows of
  `tokens`}; a non-finite value counts as 0), in every table alike."""
  queries = query_tokens(tokens, next(iter(tables.values())))
  rows = [r for found in queries.values() for r in found]
  found = {role: dict(zip(rows, neighbour_lists(t, tokens, rows)))
           for role, t in tables.items()}
  return {bucket: [{'token': tokens[r],
                    **{role: found[role][r] for role in tables}}
                   for r in picked]
          for bucket, picked in queries.items()}
