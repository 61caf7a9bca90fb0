"""Tests of components/validator/report.py."""

import json
import re
import xml.etree.ElementTree as ET

import numpy as np

from components.validator import report


def _report(blessed=False):
  return {
      'blessed': blessed,
      'summary': 'not blessed: table <tokens> collapsed',
      'current_model': '/m/1',
      'baseline_model': '/push/serving/3',
      'gates': [{'name': 'health/tokens/not_collapsed', 'passed': False,
                 'reason': 'mean cosine 0.99 > 0.9 <b>', 'value': 0.99,
                 'limit': 0.9, 'comparison': '<='}],
      'metrics': {'candidate': {'eval_loss': 2.5, 'recall_at_k': 0.1},
                  'baseline': {'eval_loss': 2.0, 'recall_at_k': 0.3}},
      'parameters': {'metrics': {'recall_at_k': 'higher',
                                 'eval_loss': 'lower'}},
  }


def _write(directory, r, candidate, baseline):
  return report.write(directory, r, candidate, baseline, 'tokens')


def test_histogram_shares_bins_and_skips_nonfinite():
  a = np.array([0.0, 1.0, 2.0, np.nan])
  b = np.array([3.0, 4.0])
  h = report.norm_histogram({'candidate': a, 'baseline': b}, bins=4)
  assert h['edges'][0] == 0.0 and h['edges'][-1] == 4.0
  assert sum(h['counts']['candidate']) == 3
  assert sum(h['counts']['baseline']) == 2
  assert report.norm_histogram({'candidate': None})['counts'] == {}


def test_write_produces_json_and_self_contained_html(tmp_path):
  rng = np.random.default_rng(0)
  cand = rng.uniform(1, 2, 100)
  base = rng.uniform(1.5, 3, 80)
  paths = _write(str(tmp_path), _report(), cand, base)
  assert [p.rsplit('/', 1)[1] for p in paths] == ['report.json', 'report.html']
  data = json.loads((tmp_path / 'report.json').read_text())
  assert data['gates'][0]['passed'] is False
  assert sum(data['norm_histogram']['counts']['candidate']) == 100
  page = (tmp_path / 'report.html').read_text()
  assert 'NOT BLESSED' in page
  svg = ET.fromstring(page[page.index('<svg'):page.index('</svg>') + 6])
  assert svg.tag.endswith('svg')  # well-formed inline SVG, no plot library
  assert len(re.findall('class="bar-candidate"', page)) == sum(
      1 for c in data['norm_histogram']['counts']['candidate'] if c)
  assert 'class="bar-baseline"' in page
  assert '&lt;b&gt;' in page and '<b>' not in page  # reasons are escaped
  assert '0.3' in page  # baseline metric column
  # Rows: the declared metrics first, in their order; the table is named.
  assert page.index('<td>recall_at_k</td>') < page.index('<td>eval_loss</td>')
  assert 'Row norms of table <code>tokens</code>' in page
  assert data['norm_histogram']['table'] == 'tokens'


def test_html_without_baseline_says_so(tmp_path):
  r = dict(_report(blessed=True), baseline_model='')
  r['metrics']['baseline'] = None
  _write(str(tmp_path), r, np.ones(5), None)
  page = (tmp_path / 'report.html').read_text()
  assert 'BLESSED' in page and 'absolute thresholds only' in page
  assert 'class="bar-baseline"' not in page


def test_html_shows_the_reference_figures_and_warnings(tmp_path):
  r = _report()
  r['metrics']['popularity'] = {'recall_at_k': 0.0625}
  r['metrics']['untrained'] = {'eval_loss': 4.1589}
  r['references'] = {'popularity': 'popularity ranking',
                     'untrained': 'untrained table'}
  r['warnings'] = ['baseline version 3 knows only 1.8% of <the> vocabulary']
  _write(str(tmp_path), r, np.ones(5), None)
  page = (tmp_path / 'report.html').read_text()
  assert '<th>popularity ranking</th>' in page and '0.0625' in page
  assert '<th>untrained table</th>' in page and '4.1589' in page
  assert 'knows only 1.8% of &lt;the&gt; vocabulary' in page


def test_metric_columns_are_the_models_and_references_scored(tmp_path):
  """A two-tower report: its metric, its references, no empty column."""
  r = dict(_report(), metrics={
      'candidate': {'recall_at_10': 0.4}, 'baseline': None,
      'untrained': {'recall_at_10': 0.01}},
           references={'untrained': 'untrained model'},
           parameters={'metrics': {'recall_at_10': 'higher'}})
  _write(str(tmp_path), r, np.ones(5), None)
  page = (tmp_path / 'report.html').read_text()
  heads = re.findall('<th>([^<]*)</th>', page[page.index('<h2>Metrics'):])
  assert heads[:3] == ['metric', 'candidate', 'untrained model']
  assert 'frequency-only' not in page and 'popularity' not in page
  assert '<td>recall_at_10</td><td>0.4</td><td>0.01</td>' in page


def test_unreadable_baseline_note_in_html_and_one_line(tmp_path):
  r = dict(_report(blessed=True), baseline_version=3, baseline_unreadable=[
      {'version': 4, 'path': '/push/serving/4',
       'error': 'serving/4/variables/variables.data-00000-of-00001 is 1000 '
                'bytes, its manifest records 9000 <x>'}])
  note = report.unreadable_baseline_note(r)
  assert note == (
      'pushed baseline cannot be read (version 4: serving/4/variables/'
      'variables.data-00000-of-00001 is 1000 bytes, its manifest records '
      '9000 <x>); compared against version 3, the newest readable one')
  _write(str(tmp_path), r, np.ones(5), np.ones(5))
  page = (tmp_path / 'report.html').read_text()
  assert 'class="unreadable-baseline"' in page and '9000 &lt;x&gt;' in page
  assert json.loads((tmp_path / 'report.json').read_text())[
      'baseline_unreadable'][0]['version'] == 4
  none_left = dict(r, baseline_version=None, baseline_model='')
  assert report.unreadable_baseline_note(none_left).endswith(
      'no readable pushed version, so absolute thresholds only')
  assert report.unreadable_baseline_note(_report()) == ''
