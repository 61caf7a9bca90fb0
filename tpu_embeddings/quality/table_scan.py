"""Passes over a table's rows in blocks of bounded bytes.

The validator scores queries against every row of tables of millions of
rows. A [queries, rows] matrix of scores would grow with the vocabulary
(1024 queries x 10M rows x 4 bytes is 40 GB), so every pass here walks the
table in blocks of rows, each scored against a chunk of queries, and keeps
per query only what the metric needs: a count, or the best rows. The
scores are float32, the table's own precision; no copy of the table is
made (unit rows are computed per block).

Unit rows are what `unit_rows` gives: non-finite values read as 0, rows
divided by their norm, a row whose norm is at most ZERO_NORM (never
trained, or unknown to an aligned table) left at zero.
"""

from typing import Iterator, Sequence, Tuple

import numpy as np

# A row whose norm is below this counts as a zero row (never trained with a
# zeros initializer, or an OOV row of an aligned table).
ZERO_NORM = 1e-12
# Bytes of one block of scores ([queries, rows] float32).
BLOCK_BYTES = 32 << 20
# Queries scored per pass over the table; at least MIN_BLOCK_ROWS rows per
# block keep the matrix products efficient.
MAX_QUERIES = 2048
MIN_BLOCK_ROWS = 1024


def unit_rows(rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """(float32 unit rows, nonzero mask) of `rows` (module docstring)."""
  t = np.nan_to_num(rows.astype(np.float32), copy=False, nan=0.0, posinf=0.0,
                    neginf=0.0)
  norms = np.linalg.norm(t, axis=1)
  nonzero = norms > ZERO_NORM
  unit = np.zeros_like(t)
  unit[nonzero] = t[nonzero] / norms[nonzero, None]
  return unit, nonzero


def row_ranges(rows: int, bytes_per_row: int,
               budget: int = BLOCK_BYTES) -> Iterator[Tuple[int, int]]:
  """[start, stop) ranges covering `rows` rows, each within `budget` bytes
  at `bytes_per_row` (at least one row)."""
  step = max(1, budget // max(bytes_per_row, 1))
  for start in range(0, rows, step):
    yield start, min(rows, start + step)


def _block_rows(queries: int, dim: int) -> int:
  """Rows per block: their scores within BLOCK_BYTES, and their unit rows
  (with `unit_rows`' temporaries, about 16 bytes a value) too."""
  return max(MIN_BLOCK_ROWS, min(BLOCK_BYTES // (4 * max(queries, 1)),
                                 BLOCK_BYTES // (16 * max(dim, 1))))


def _query_chunks(n: int) -> Iterator[slice]:
  for start in range(0, n, MAX_QUERIES):
    yield slice(start, min(n, start + MAX_QUERIES))


def _mask(scores: np.ndarray, rows: np.ndarray, start: int, stop: int):
  """-inf at (i, rows[i]) for the rows inside [start, stop)."""
  inside = np.flatnonzero((rows >= start) & (rows < stop))
  scores[inside, rows[inside] - start] = -np.inf


def count_at_least(table: np.ndarray, queries: np.ndarray,
                   thresholds: np.ndarray,
                   left_out: Sequence[np.ndarray] = ()) -> np.ndarray:
  """For each query vector (float32 [n, dim]), how many unit rows of `table`
  score at least its threshold; row left_out[j][i] is not counted for query
  i. Zero rows score 0."""
  counts = np.zeros([len(queries)], np.int64)
  for chunk in _query_chunks(len(queries)):
    q = queries[chunk]
    step = _block_rows(len(q), table.shape[1])
    for start in range(0, table.shape[0], step):
      stop = min(table.shape[0], start + step)
      unit, _ = unit_rows(table[start:stop])
      scores = q @ unit.T
      for rows in left_out:
        _mask(scores, rows[chunk], start, stop)
      counts[chunk] += np.count_nonzero(
          scores >= thresholds[chunk, None], axis=1)
  return counts


def best_rows(table: np.ndarray, queries: np.ndarray, k: int,
              left_out: Sequence[np.ndarray] = ()
              ) -> Tuple[np.ndarray, np.ndarray]:
  """The k unit rows of `table` scoring highest against each query vector
  (float32 [n, dim]), zero rows and row left_out[j][i] of query i left
  out: (rows [n, k'] int64, scores [n, k'] float32), best first, ties to
  the lower row; k' = min(k, rows). A query with fewer rows to rank gets
  -inf scores (and row -1) in the places left."""
  n, k = len(queries), min(k, table.shape[0])
  best = np.full([n, k], -np.inf, np.float32)
  where = np.full([n, k], -1, np.int64)
  for chunk in _query_chunks(n):
    q = queries[chunk]
    step = _block_rows(len(q), table.shape[1])
    for start in range(0, table.shape[0], step):
      stop = min(table.shape[0], start + step)
      unit, nonzero = unit_rows(table[start:stop])
      scores = q @ unit.T
      scores[:, ~nonzero] = -np.inf
      for rows in left_out:
        _mask(scores, rows[chunk], start, stop)
      # Candidates: the block's k best (or all of it), then the k best of
      # those and the best so far.
      if k == 1:
        top = np.argmax(scores, axis=1)[:, None]
      elif scores.shape[1] > k:
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
      else:
        top = np.broadcast_to(np.arange(scores.shape[1]),
                              (scores.shape[0], scores.shape[1]))
      values = np.concatenate(
          [best[chunk], np.take_along_axis(scores, top, axis=1)], axis=1)
      ids = np.concatenate([where[chunk], top + start], axis=1)
      # Highest score first; among equal scores the lower row.
      order = np.lexsort((ids, -values), axis=1)[:, :k]
      best[chunk] = np.take_along_axis(values, order, axis=1)
      where[chunk] = np.take_along_axis(ids, order, axis=1)
  where[~np.isfinite(best)] = -1
  return where, best


def known_rows(table: np.ndarray) -> np.ndarray:
  """Rows whose unit row is not zero (`unit_rows`), ascending."""
  found = []
  for start, stop in row_ranges(table.shape[0], table.shape[1] * 16):
    found.append(start + np.flatnonzero(unit_rows(table[start:stop])[1]))
  return np.concatenate(found) if found else np.zeros([0], np.int64)
