"""Tests of tpu_embeddings/quality/inspection.py."""

import numpy as np

from tpu_embeddings.quality import inspection

TOKENS = [f't{i}' for i in range(30)]


def _table():
  rng = np.random.default_rng(0)
  table = rng.normal(size=(30, 4)).astype(np.float32)
  table[7] = table[3] * 2.0  # t7 is t3's nearest neighbour
  table[29] = 0.0            # unknown to the model
  return table


def test_queries_spread_over_each_third_and_skip_unknown_rows():
  queries = inspection.query_tokens(TOKENS, _table())
  assert set(queries) == set(inspection.BUCKETS)
  assert all(r < 10 for r in queries['frequent'])
  assert all(10 <= r < 20 for r in queries['mid'])
  assert all(20 <= r < 29 for r in queries['rare'])


def test_neighbours_leave_out_the_query_and_unknown_rows():
  found = inspection.neighbours(_table(), TOKENS, 3, k=29)
  assert found[0] == ['t7', 1.0]
  assert 't3' not in [t for t, _ in found] and 't29' not in [
      t for t, _ in found]
  assert inspection.neighbours(_table(), TOKENS, 29) == []


def test_recall_by_frequency_bucket_per_model_and_popularity():
  table = _table()
  targets = np.array([3, 7, 15, 25])
  contexts = np.array([7, 3, 3, 3])
  rows = inspection.by_frequency({'candidate': table}, targets, contexts, 1)
  assert [r['bucket'] for r in rows] == list(inspection.BUCKETS)
  assert rows[0]['pairs'] == 2 and rows[0]['candidate'] == 1.0
  assert rows[0]['popularity'] == 0.0  # 3 and 7 are not the top token


def test_neighbours_by_bucket_query_the_same_tokens_in_every_table():
  table = _table()
  found = inspection.neighbours_by_bucket(
      TOKENS, {'candidate': table, 'baseline': table * 0.5})
  assert set(found) == set(inspection.BUCKETS)
  queries = [q for bucket in found.values() for q in bucket]
  assert {q['token'] for q in queries} >= {'t0', 't28'}
  # Scaling a table keeps its cosines: the same neighbours in both.
  assert all(q['candidate'] == q['baseline'] for q in queries)
  assert 't29' not in {q['token'] for q in queries}


def test_non_finite_rows_are_left_out_of_the_map():
  table = _table()
  table[3] = np.nan
  found = inspection.pca_map(table, TOKENS)
  assert 't3' not in found['tokens'] and len(found['tokens']) == 28
