import filecmp
import os

import pytest

from pipelines import demo_data
from pipelines.cli.main import main

SMALL = demo_data.CorpusShape(lines_per_span=100)


def _tree(root):
  return sorted(os.path.relpath(os.path.join(d, f), root)
                for d, _, fs in os.walk(root) for f in fs)


def test_same_seed_same_bytes(tmp_path):
  a, b = tmp_path / 'a', tmp_path / 'b'
  assert main(['demo-data', '--out', str(a), '--spans', '2', '--seed', '7',
               '--lines-per-span', '100']) == 0
  demo_data.generate(str(b), spans=2, seed=7, shape=SMALL)
  assert _tree(a) == _tree(b) == [
      'related_pairs.tsv', 'span-1/corpus-00000.txt', 'span-2/corpus-00000.txt']
  for f in _tree(a):
    assert filecmp.cmp(a / f, b / f, shallow=False)
  c = tmp_path / 'c'
  demo_data.generate(str(c), spans=1, seed=8, shape=SMALL)
  assert not filecmp.cmp(a / 'span-1/corpus-00000.txt',
                         c / 'span-1/corpus-00000.txt', shallow=False)


def test_planted_structure(tmp_path):
  demo_data.generate(str(tmp_path), spans=1, seed=1)
  lines = (tmp_path / 'span-1' / 'corpus-00000.txt').read_text().splitlines()
  assert len(lines) == demo_data.CorpusShape().lines_per_span
  for line in lines:
    topics = {t.split('-')[0] for t in line.split() if not t.startswith('x-')}
    assert len(topics) <= 1  # one topic per line, plus filler
  pairs = demo_data.read_related_pairs(str(tmp_path / 'related_pairs.tsv'))
  assert pairs and all(a.split('-')[0] == b.split('-')[0] for a, b in pairs)
  vocab = {t for l in lines for t in l.split()}
  assert all(a in vocab and b in vocab for a, b in pairs)


def test_adding_a_span_keeps_earlier_ones(tmp_path):
  demo_data.generate(str(tmp_path), spans=1, seed=2, shape=SMALL)
  before = (tmp_path / 'span-1' / 'corpus-00000.txt').read_bytes()
  demo_data.generate(str(tmp_path), spans=1, seed=2, first_span=2, shape=SMALL)
  assert (tmp_path / 'span-1' / 'corpus-00000.txt').read_bytes() == before
  assert (tmp_path / 'span-2').is_dir()


def test_existing_span_is_refused_and_nothing_is_written(tmp_path, capsys):
  demo_data.generate(str(tmp_path), spans=1, shape=SMALL)
  assert main(['demo-data', '--out', str(tmp_path), '--spans', '2']) == 2
  err = capsys.readouterr().err
  assert 'span-1 already exists' in err and err.count('\n') == 1
  assert not (tmp_path / 'span-2').exists()


@pytest.mark.parametrize('kwargs', [
    dict(spans=0), dict(shape=demo_data.CorpusShape(topics=99))])
def test_bad_arguments(tmp_path, kwargs):
  with pytest.raises(ValueError, match='demo-data'):
    demo_data.generate(str(tmp_path / 'x'), **kwargs)
