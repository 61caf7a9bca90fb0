"""The validator's block-by-block float32 metrics against float64 references,
and within a memory limit on a table whose full score matrix would not fit."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support import paths
from tpu_embeddings.quality import metrics
from tpu_embeddings.quality import table_scan

# -- float32 blocks against a float64 reference --------------------------------
# The metrics score float32 unit rows block by block; the reference below
# scores float64 rows all at once. A 16-dim cosine of float32 unit rows is
# within a few 1e-7 of its float64 value (checked below), so the two can
# disagree only where some row's float64 score lies within 1e-6 of the
# query's threshold: such queries are "near ties" and are left out of the
# exact comparison, and the test requires them to be rare.
NEAR = 1e-6


def _reference_unit(table):
  t = np.nan_to_num(table.astype(np.float64), nan=0.0, posinf=0.0,
                    neginf=0.0)
  norms = np.linalg.norm(t, axis=1)
  known = norms > metrics.ZERO_NORM
  t[known] /= norms[known, None]
  t[~known] = 0.0
  return t, known


def _scale_table(rows=3000, dim=16, seed=7):
  rng = np.random.default_rng(seed)
  table = rng.normal(size=(rows, dim)).astype(np.float32)
  table[5:9] = 0.0                # unknown rows
  table[11, 3] = np.nan           # a non-finite value reads as 0
  table[20] = table[21] * 3.0     # exact ties: the same direction
  table[22] = table[21]
  return table


def _reference_hits(table, queries, answers, k):
  """(hits, near ties) by the float64 definition of `recall_hits`."""
  unit, known = _reference_unit(table)
  scores = unit[queries] @ unit.T
  rows = np.arange(len(queries))
  threshold = scores[rows, answers] - 1e-6
  scores[rows, queries] = scores[rows, answers] = -np.inf
  others = np.sum(scores >= threshold[:, None], axis=1)
  gap = np.abs(scores - threshold[:, None])
  # An exact tie with the answer (rows of one direction) is no near tie:
  # both count it against the answer.
  exact = np.abs(scores - (threshold[:, None] + 1e-6)) <= 1e-12
  near = np.any((gap <= NEAR) & ~exact, axis=1)
  return (others < k) & known[queries] & known[answers], near


def test_float32_cosines_are_within_the_tie_slack_of_float64():
  table = _scale_table()
  unit64, _ = _reference_unit(table)
  unit32 = unit64.astype(np.float32)
  error = np.abs((unit32[:200] @ unit32.T).astype(np.float64)
                 - unit64[:200] @ unit64.T)
  assert error.max() < 0.5 * NEAR


@pytest.mark.parametrize('k', [1, 10, 50])
def test_recall_hits_match_the_float64_ranking(k):
  table = _scale_table()
  rng = np.random.default_rng(k)
  queries = rng.integers(0, table.shape[0], 2500)
  # Answers around the k-th nearest row, so that hits and misses both occur.
  unit, _ = _reference_unit(table)
  order = np.argsort(-(unit[queries] @ unit.T), axis=1, kind='stable')
  answers = order[np.arange(queries.size), rng.integers(1, 2 * k + 2,
                                                        queries.size)]
  queries[:40] = 21   # its nearest rows, 20 and 22, tie
  answers[:40] = np.r_[20, 22].repeat(20)
  distinct = queries != answers
  queries, answers = queries[distinct], answers[distinct]
  want, near = _reference_hits(table, queries, answers, k)
  got = metrics.recall_hits(table, queries, answers, k)
  assert near.mean() < 0.01 and 0 < want.sum() < want.size
  np.testing.assert_array_equal(got[~near], want[~near])
  # A tie counts against the answer: at k=1 neither tied row is a hit.
  assert not got[:40].any() if k == 1 else got[:40].all()
  assert metrics.recall_at_k(table, queries, answers, k) == pytest.approx(
      want.mean(), abs=near.mean())


def test_recall_hits_do_not_depend_on_the_blocks(monkeypatch):
  table = _scale_table(rows=500)
  rng = np.random.default_rng(9)
  queries = rng.integers(0, 500, 300)
  answers = (queries + rng.integers(1, 500, 300)) % 500
  whole = metrics.recall_hits(table, queries, answers, 7)
  questions = [(f't{a}', f't{b}', f't{c}', f't{d}')
               for a, b, c, d in rng.integers(0, 500, (200, 4))]
  ids = {f't{i}': i for i in range(500)}
  analogies = metrics.analogy_accuracy(table, ids, questions)
  monkeypatch.setattr(table_scan, 'BLOCK_BYTES', 4096)
  monkeypatch.setattr(table_scan, 'MIN_BLOCK_ROWS', 7)
  monkeypatch.setattr(table_scan, 'MAX_QUERIES', 13)
  np.testing.assert_array_equal(
      metrics.recall_hits(table, queries, answers, 7), whole)
  assert metrics.analogy_accuracy(table, ids, questions) == analogies


def test_analogy_answers_match_the_float64_argmax():
  table = _scale_table()
  rng = np.random.default_rng(3)
  rows = rng.integers(0, table.shape[0], (1500, 4))
  unit, known = _reference_unit(table)
  query = unit[rows[:, 1]] - unit[rows[:, 0]] + unit[rows[:, 2]]
  scores = query @ unit.T
  scores[:, ~known] = -np.inf
  for j in range(3):
    scores[np.arange(len(rows)), rows[:, j]] = -np.inf
  top2 = -np.sort(-scores, axis=1)[:, :2]
  clear = top2[:, 0] - top2[:, 1] > NEAR
  # The question's answer is set to the float64 answer where it is clear.
  rows[:, 3] = np.argmax(scores, axis=1)
  ids = {f't{i}': i for i in range(table.shape[0])}
  questions = [tuple(f't{i}' for i in r) for r in rows[clear]]
  assert clear.mean() > 0.99
  assert metrics.analogy_accuracy(table, ids, questions)[
      'analogy_accuracy'] == 1.0


# -- memory: a table whose [queries, rows] scores would not fit ----------------
_UNDER_A_LIMIT = r'''
import resource, sys
import numpy as np
from tpu_embeddings.quality import inspection, metrics

rows, dim, headroom = int(sys.argv[1]), 16, int(sys.argv[2])
rng = np.random.default_rng(0)
table = rng.normal(size=(rows, dim)).astype(np.float32)
tokens = [f't{i}' for i in range(rows)]
queries = rng.integers(0, rows, 2000)
answers = rng.integers(0, rows, 2000)
table[:64] @ table[:64].T  # BLAS's buffers, before the limit
with open('/proc/self/statm') as f:
  now = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (now + headroom, now + headroom))
metrics.recall_at_k(table, queries, answers, 10)
metrics.table_health(table)
both = {'candidate': table, 'baseline': table}
inspection.neighbours_by_bucket(tokens, both)
inspection.by_frequency(both, queries, answers, 10)
inspection.pca_map(table, tokens)
print('within the limit')
'''


@pytest.mark.slow
def test_the_metrics_of_a_large_table_fit_a_memory_limit():
  """400k rows: scoring 1024 queries against every row at once would take
  1.6 GB of float32 scores; the metrics get 500 MB above the table."""
  env = dict(os.environ, PYTHONPATH=paths.REPO, OPENBLAS_NUM_THREADS='1')
  done = subprocess.run(
      [sys.executable, '-c', _UNDER_A_LIMIT, '400000', str(500 << 20)],
      cwd=paths.REPO, env=env, capture_output=True, text=True, timeout=300,
      check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  assert 'within the limit' in done.stdout
