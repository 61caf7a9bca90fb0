"""Metrics of one embedding table: numeric health and held-out quality.

Every quality metric takes a table already aligned to the evaluation
vocabulary (row i = evaluation token i, zeros for tokens the model does not
know, as the exports do), so the candidate and the pushed baseline are scored
on the same data by the same code.

* health: NaN/Inf count, row norms, mean pairwise cosine (collapse).
* skip-gram loss on held-out (target, context) pairs with shared negatives,
  by the trainer's definition (`tpu_embeddings.models.heldout`).
* recall@k: is the true context among the k nearest tokens (cosine) of the
  target, over the whole evaluation vocabulary.
* Spearman correlation with human similarity scores (WordSim-353 format).
* recall@k of related pairs (one "tokenA<TAB>tokenB" per line).
* analogy accuracy (3CosAdd, gensim's questions-words.txt format).

Words of the similarity and analogy files match a token exactly or, failing
that, lower-cased: those files capitalize names ("Athens"), corpora often
do not.

Memory: every pass over a table walks it in blocks (`table_scan`), so what a
metric holds besides the table does not grow with the vocabulary but for a
few bytes per row (norms, masks); nearest-row scores are float32, the
table's precision, health figures float64.
"""

import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from tpu_embeddings.artifacts import compact_vocabulary
from tpu_embeddings.quality import table_scan

ZERO_NORM = table_scan.ZERO_NORM
# Slack below the answer's score within which another row ties it (float32
# rounding of a cosine is far smaller).
TIE = np.float32(1e-6)


# -- numeric health ------------------------------------------------------------
def row_norms(table: np.ndarray) -> np.ndarray:
  """L2 norm of each row (float64); NaN for rows holding a non-finite value."""
  out = np.empty([table.shape[0]], np.float64)
  for start, stop in table_scan.row_ranges(table.shape[0],
                                           table.shape[1] * 16):
    with np.errstate(over='ignore', invalid='ignore'):
      out[start:stop] = np.sqrt(np.sum(np.square(
          table[start:stop].astype(np.float64)), axis=1))
  return out


def mean_pairwise_cosine(table: np.ndarray) -> Optional[float]:
  """Mean cosine over all pairs of distinct non-zero finite rows; exact, O(n d).

  With unit rows u_i: sum_{i != j} u_i.u_j = |sum_i u_i|^2 - n. None when
  fewer than two such rows exist.
  """
  total = np.zeros([table.shape[1]], np.float64)
  n = 0
  # A float64 block and its temporaries: about 4 x 8 bytes per value.
  for start, stop in table_scan.row_ranges(table.shape[0],
                                           table.shape[1] * 32):
    t = table[start:stop].astype(np.float64)
    with np.errstate(over='ignore', invalid='ignore'):
      norms = np.sqrt(np.sum(np.square(t), axis=1))
    keep = np.isfinite(norms) & (norms > ZERO_NORM)
    n += int(keep.sum())
    total += (t[keep] / norms[keep, None]).sum(axis=0)
  if n < 2:
    return None
  return float((total @ total - n) / (n * (n - 1)))


def table_health(table: np.ndarray) -> Dict[str, object]:
  """JSON-ready health summary of one table."""
  finite_rows = np.empty([table.shape[0]], bool)
  nonfinite = 0
  for start, stop in table_scan.row_ranges(table.shape[0], table.shape[1]):
    finite = np.isfinite(table[start:stop])
    finite_rows[start:stop] = finite.all(axis=1)
    nonfinite += int(finite.size - np.count_nonzero(finite))
  finite_norms = row_norms(table)[finite_rows]
  return {
      'rows': int(table.shape[0]),
      'dim': int(table.shape[1]),
      'nonfinite_values': nonfinite,
      'nonfinite_rows': int((~finite_rows).sum()),
      'zero_rows': int((finite_norms <= ZERO_NORM).sum()),
      'mean_norm': _float(finite_norms.mean()) if finite_norms.size else None,
      'max_norm': _float(finite_norms.max()) if finite_norms.size else None,
      'p99_norm': (_float(np.percentile(finite_norms, 99))
                   if finite_norms.size else None),
      'mean_pairwise_cosine': mean_pairwise_cosine(table),
  }


def _float(x) -> Optional[float]:
  x = float(x)
  return x if math.isfinite(x) else None


# -- aligning a model's table to the evaluation vocabulary ---------------------
def _compact(tokens: Sequence[str]) -> compact_vocabulary.CompactVocabulary:
  if isinstance(tokens, compact_vocabulary.CompactVocabulary):
    return tokens
  return compact_vocabulary.CompactVocabulary.from_tokens(tokens)


def align_table(model_tokens: Sequence[str], table: np.ndarray,
                eval_tokens: Sequence[str]) -> np.ndarray:
  """Rows of `table` reordered to `eval_tokens`; unknown tokens get zeros.

  `table` itself (no copy) when both hold the same tokens in the same order
  (`CompactVocabulary.same_tokens`); treat the result as read-only.
  """
  if len(model_tokens) != table.shape[0]:
    raise ValueError(f'align_table: {len(model_tokens)} tokens but the table '
                     f'has {table.shape[0]} rows')
  if (isinstance(model_tokens, compact_vocabulary.CompactVocabulary) and
      model_tokens.same_tokens(eval_tokens)):
    return table
  eval_tokens = _compact(eval_tokens)
  out = np.zeros((len(eval_tokens), table.shape[1]), dtype=np.float32)
  for start, stop in table_scan.row_ranges(len(model_tokens), 1,
                                           budget=1 << 16):
    rows = eval_tokens.rows(model_tokens[start:stop])
    known = np.flatnonzero(rows >= 0)
    out[rows[known]] = table[start + known]
  return out


# -- nearest neighbours --------------------------------------------------------
def _distinct_pairs(queries: np.ndarray, answers: np.ndarray, k: int
                    ) -> Tuple[np.ndarray, np.ndarray]:
  """The (query, answer) pairs a recall@k scores: answer != query."""
  if k < 1:
    raise ValueError(f'k must be >= 1, got {k}')
  queries, answers = np.asarray(queries), np.asarray(answers)
  keep = queries != answers
  return queries[keep], answers[keep]


def recall_hits(table: np.ndarray, queries: np.ndarray, answers: np.ndarray,
                k: int) -> np.ndarray:
  """[n] bool: is each answer among its query's k nearest rows (cosine)?

  The query row itself is never a candidate. Ties count against the model
  (the answer must beat or tie fewer than k others), and a zero query or
  answer row (an unknown token, or a dead row) is a miss. Every pair must
  have answer != query.
  """
  if k < 1:
    raise ValueError(f'k must be >= 1, got {k}')
  queries = np.asarray(queries, np.int64)
  answers = np.asarray(answers, np.int64)
  q_unit, q_known = table_scan.unit_rows(table[queries])
  a_unit, a_known = table_scan.unit_rows(table[answers])
  answer_score = np.einsum('ij,ij->i', q_unit, a_unit)
  others_at_least = table_scan.count_at_least(
      table, q_unit, answer_score - TIE, left_out=(queries, answers))
  return (others_at_least < k) & q_known & a_known


def recall_at_k(table: np.ndarray, queries: np.ndarray, answers: np.ndarray,
                k: int) -> Optional[float]:
  """Fraction of queries whose answer is among their k nearest rows (cosine).

  As `recall_hits`, so a constant or empty table scores 0. Pairs with
  answer == query are skipped; None when no query is left.
  """
  queries, answers = _distinct_pairs(queries, answers, k)
  if queries.size == 0:
    return None
  return int(recall_hits(table, queries, answers, k).sum()) / queries.size


def popularity_recall_at_k(queries: np.ndarray, answers: np.ndarray,
                           k: int) -> Optional[float]:
  """`recall_at_k` of ranking tokens by frequency, the same for every query.

  Rows are in vocabulary order (count descending), so row i is the i-th most
  frequent token; the query itself is never a candidate.
  """
  queries, answers = _distinct_pairs(queries, answers, k)
  if queries.size == 0:
    return None
  rank = answers - (queries < answers)  # the query's row is skipped
  return float(np.mean(rank < k))


def average_ranks(x: np.ndarray) -> np.ndarray:
  """1-based ranks, ties sharing their average rank."""
  x = np.asarray(x, dtype=np.float64)
  order = np.argsort(x, kind='stable')
  sorted_x = x[order]
  ranks = np.empty(x.size, dtype=np.float64)
  start = 0
  while start < x.size:
    end = start
    while end + 1 < x.size and sorted_x[end + 1] == sorted_x[start]:
      end += 1
    ranks[order[start:end + 1]] = (start + end) / 2.0 + 1.0
    start = end + 1
  return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> Optional[float]:
  """Spearman's rho (Pearson on average ranks); None if undefined."""
  x = np.asarray(x, dtype=np.float64)
  y = np.asarray(y, dtype=np.float64)
  if x.size < 2 or x.size != y.size:
    return None
  rx = average_ranks(x) - (x.size + 1) / 2.0
  ry = average_ranks(y) - (y.size + 1) / 2.0
  denom = math.sqrt(float(rx @ rx) * float(ry @ ry))
  if denom == 0.0:
    return None
  return float(rx @ ry) / denom


def cosine(table: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """Row-wise cosine of table[a] and table[b]; 0 where either row is zero."""
  unit_a, _ = table_scan.unit_rows(table[np.asarray(a, np.int64)])
  unit_b, _ = table_scan.unit_rows(table[np.asarray(b, np.int64)])
  return np.sum(unit_a * unit_b, axis=1)


def covered(pairs: Sequence[Tuple], ids: Mapping[str, int]) -> List[int]:
  """Indices of pairs whose two tokens are both in the evaluation vocabulary."""
  return [i for i, p in enumerate(pairs) if p[0] in ids and p[1] in ids]


def word_id(word: str, ids: Mapping[str, int]) -> Optional[int]:
  """The row of `word`, or of its lower-cased form; None if neither."""
  found = ids.get(word)
  return ids.get(word.lower()) if found is None else found


def _word_rows(rows: Sequence[Sequence[str]], ids: Mapping[str, int]
               ) -> np.ndarray:
  """[n, len(row)] ids of the rows whose words are all known (others left
  out)."""
  out = []
  for words in rows:
    found = [word_id(w, ids) for w in words]
    if None not in found:
      out.append(found)
  return np.array(out, dtype=np.int64).reshape(-1, len(rows[0]) if rows else 0)


def similarity_spearman(table: np.ndarray, ids: Mapping[str, int],
                        triples: Sequence[Tuple[str, str, float]]
                        ) -> Dict[str, object]:
  """Spearman of model cosine vs human score over covered pairs."""
  idx = [i for i, t in enumerate(triples)
         if word_id(t[0], ids) is not None and word_id(t[1], ids) is not None]
  result = {'pairs': len(triples), 'covered_pairs': len(idx), 'spearman': None}
  if len(idx) >= 3:
    a = np.array([word_id(triples[i][0], ids) for i in idx])
    b = np.array([word_id(triples[i][1], ids) for i in idx])
    human = [triples[i][2] for i in idx]
    result['spearman'] = spearman(cosine(table, a, b), human)
  return result


def related_recall_at_k(table: np.ndarray, ids: Mapping[str, int],
                        pairs: Sequence[Tuple[str, str]], k: int
                        ) -> Dict[str, object]:
  """recall@k of B among A's neighbours, both directions, over covered pairs."""
  idx = [i for i in covered(pairs, ids) if pairs[i][0] != pairs[i][1]]
  result = {'pairs': len(pairs), 'covered_pairs': len(idx),
            'recall_at_k': None}
  if idx:
    a = np.array([ids[pairs[i][0]] for i in idx])
    b = np.array([ids[pairs[i][1]] for i in idx])
    result['recall_at_k'] = recall_at_k(
        table, np.concatenate([a, b]), np.concatenate([b, a]), k)
  return result


def analogy_accuracy(table: np.ndarray, ids: Mapping[str, int],
                     questions: Sequence[Tuple[str, str, str, str]]
                     ) -> Dict[str, object]:
  """Share of "a b c d" questions whose nearest row to b - a + c (unit rows,
  cosine, a, b and c left out) is d; over questions with all four known."""
  rows = _word_rows(questions, ids)
  result = {'questions': len(questions), 'covered_questions': len(rows),
            'analogy_accuracy': None}
  if not len(rows):
    return result
  unit = [table_scan.unit_rows(table[rows[:, j]]) for j in range(4)]
  query = unit[1][0] - unit[0][0] + unit[2][0]
  best, _ = table_scan.best_rows(table, query, 1,
                                 left_out=[rows[:, j] for j in range(3)])
  hits = int(np.sum((best[:, 0] == rows[:, 3]) & unit[3][1]))
  result['analogy_accuracy'] = hits / len(rows)
  return result
