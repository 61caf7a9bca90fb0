"""Retrieval metrics for `eval_fn`: is the answer among the k best candidates.

    def eval_fn(serve, ctx):
      return {'recall_at_10': retrieval.recall_at_k(
          serve['serving_default'], serve['candidate'],
          queries=ctx.eval_examples(), catalog=ctx.catalog(CANDIDATE),
          answer='item_id', k=10, exclude='history')}

Queries and candidates are embedded by the given signatures (what serving
returns) and ranked by dot product (cosine when the towers normalize). The
query's own items (`exclude`, a bag feature of the queries) are left out of
its ranking; an answer missing from the catalog, or left out, is a miss;
ties count against the answer. `popularity_recall_at_k` ranks the catalog by
training counts instead: the floor a learned model must clear.
"""

from typing import Mapping, Optional, Sequence

import numpy as np

from tpu_embeddings.models import served

_CHUNK = 1024


def _rows(catalog_keys: Sequence[str]):
  return {str(t): i for i, t in enumerate(catalog_keys)}


def _excluded(queries: Mapping[str, np.ndarray], exclude: str, rows,
              n: int) -> Sequence[np.ndarray]:
  if not exclude:
    return [np.zeros([0], np.int64)] * n
  return [np.asarray([rows[t] for t in str(bag).split() if t in rows],
                     np.int64) for bag in queries[exclude]]


def hits_at_k(scores: np.ndarray, answers: np.ndarray,
              excluded: Sequence[np.ndarray], k: int) -> np.ndarray:
  """[Q] bool: the answer (a catalog row, -1 none) ranks in the top k of its
  row of `scores` [Q, C], excluded rows left out and ties against it."""
  scores = scores.astype(np.float64, copy=True)
  for q, rows in enumerate(excluded):
    scores[q, rows] = -np.inf
  found = answers >= 0
  safe = np.where(found, answers, 0)
  answer_score = scores[np.arange(len(answers)), safe]
  scores[np.arange(len(answers)), safe] = -np.inf
  others_at_least = np.sum(scores >= answer_score[:, None], axis=1)
  return found & np.isfinite(answer_score) & (others_at_least < k)


def recall_at_k(query: served.Signature, candidate: served.Signature,
                queries: Mapping[str, np.ndarray],
                catalog: Mapping[str, np.ndarray], answer: str, k: int = 10,
                exclude: str = '', query_output: str = '',
                candidate_output: str = '') -> Optional[float]:
  """Share of queries whose `answer` (a catalog key) ranks in the top k.

  `catalog[answer]` names the candidates; `queries[answer]` each query's
  right one. None without queries.
  """
  n = len(queries[answer])
  if not n:
    return None
  c = served.vectors(candidate(**{f: catalog[f] for f in candidate.inputs}),
                     candidate_output)
  q = served.vectors(query(**{f: queries[f] for f in query.inputs}),
                     query_output)
  rows = _rows(catalog[answer])
  answers = np.asarray([rows.get(str(a), -1) for a in queries[answer]])
  excluded = _excluded(queries, exclude, rows, n)
  hits = 0
  for s in range(0, n, _CHUNK):
    hits += int(hits_at_k(q[s:s + _CHUNK] @ c.T, answers[s:s + _CHUNK],
                          excluded[s:s + _CHUNK], k).sum())
  return hits / n


def popularity_recall_at_k(counts: Mapping[str, int],
                           queries: Mapping[str, np.ndarray],
                           catalog: Mapping[str, np.ndarray], answer: str,
                           k: int = 10, exclude: str = '') -> Optional[float]:
  """`recall_at_k` of ranking the catalog by training count, every query
  alike (its own items left out)."""
  n = len(queries[answer])
  if not n:
    return None
  keys = catalog[answer]
  popularity = np.asarray([counts.get(str(t), 0) for t in keys], np.float64)
  rows = _rows(keys)
  answers = np.asarray([rows.get(str(a), -1) for a in queries[answer]])
  excluded = _excluded(queries, exclude, rows, n)
  hits = 0
  for s in range(0, n, _CHUNK):
    chunk = answers[s:s + _CHUNK]
    scores = np.broadcast_to(popularity, (len(chunk), len(keys)))
    hits += int(hits_at_k(scores, chunk, excluded[s:s + _CHUNK], k).sum())
  return hits / n
