"""Tests of components/validator/inspection.py and report_sections.py."""

import numpy as np

from components.validator import inspection
from components.validator import report_sections

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


def test_report_sections_render_every_part():
  table = _table()
  section = inspection.inspect(TOKENS, table, table * 0.5, np.array([3, 7]),
                               np.array([7, 3]), 5)
  assert len(section['map']['tokens']) == 29
  page = report_sections.render(section)
  assert '<h2>Nearest neighbours</h2>' in page
  assert '<th>candidate</th><th>baseline</th>' in page
  assert page.count('class="map-token"') == 29
  assert report_sections.render({}) == ''


def test_non_finite_rows_are_shown_as_unknown():
  table = _table()
  table[3] = np.nan
  section = inspection.inspect(TOKENS, table, None, np.array([3]),
                               np.array([7]), 5)
  assert 't3' not in section['map']['tokens']
