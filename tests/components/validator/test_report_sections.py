"""Tests of components/validator/report_sections.py."""

import numpy as np

from components.validator import report_sections
from tpu_embeddings.quality import inspection

TOKENS = [f't{i}' for i in range(30)]


def _inspection():
  table = np.random.default_rng(0).normal(size=(30, 4)).astype(np.float32)
  return {
      'neighbours': {'items': inspection.neighbours_by_bucket(
          TOKENS, {'candidate': table, 'baseline': table * 0.5})},
      'sections': [{'title': 'Recall by <bucket>', 'note': 'a note',
                    'columns': ['bucket', 'candidate'],
                    'rows': [['frequent', 0.25], ['rare', None]]}],
      'map': dict(inspection.pca_map(table, TOKENS), table='items'),
  }


def test_report_sections_render_every_part():
  page = report_sections.render(_inspection())
  assert '<h2>Nearest neighbours in table <code>items</code></h2>' in page
  assert '<th>candidate</th><th>baseline</th>' in page
  assert '<h2>Recall by &lt;bucket&gt;</h2>' in page
  assert '<td>frequent</td><td>0.25</td>' in page
  assert '<td>rare</td><td>&ndash;</td>' in page
  assert 'most frequent tokens of table <code>items</code>' in page
  assert page.count('class="map-token"') == 30
  assert report_sections.render({}) == ''
