"""benchmarks/targets.py end to end at a tiny size: every part runs and its
targets come out in the last table, each with a figure, a goal and a
verdict (never the figures themselves: at this size they mean nothing).
The large export's part is export_large_table's smoke test too: its own
table must come out whole."""

import os
import re
import subprocess
import sys

import pytest

from tests.support import benchmark_runs
from tests.support import paths
from tests.support import tiny_inputs


@pytest.mark.slow
def test_every_part_prints_its_targets(tmp_path):
  text = tmp_path / 'stories.txt'
  tiny_inputs.lee_stories(text)
  events = tiny_inputs.walk_events(tmp_path / 'events.csv')
  done = subprocess.run(
      [sys.executable, '-m', 'benchmarks.targets', '--small', '',
       '--text', f'stories={text}', '--seeds', '1', '--events',
       f'walks={events}', '--export-rows', '2000', '--export-dim', '8',
       '--export-rounds', '1', '--demo-runs', '1',
       '--work', str(tmp_path / 'work')],
      cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=paths.REPO),
      capture_output=True, text=True, timeout=900, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  benchmark_runs.check_rows(
      'export_large_table', done.stdout,
      ['(a) TF2 tf.saved_model.save', '(b) TF Hub recipe',
       'ours, both + load checks'])
  table = done.stdout.split('\n== targets: ')[-1]
  assert re.match(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC, commit \w+', table), table
  verdict = r'[^\n]* (yes|NO|-)\n'
  score, ratio = r'[-+]\d\.\d{3}', r'\d+\.\d\dx'
  for row in (rf'stories: analogy - gensim +{score}',
              r'stories: blessed +(yes|NO|\d/\d)',
              rf'stories: whole pipeline / gensim build \+ train +{ratio}',
              rf'walks: HR@10 next - gensim +{score}',
              rf'walks: trainer / gensim training +{ratio}',
              rf'export 2,000 x 8: wall / peers +{ratio}',
              rf'export 2,000 x 8: peak RSS / table +{ratio}',
              r'demo: `make run` end to end +\d+\.\d s'):
    assert re.search(row + verdict, table), (row, table)
  assert re.search(r'\n\d+ of \d+ targets met', table), table


def test_nothing_to_measure_is_one_line_naming_the_options(tmp_path):
  done = subprocess.run(
      [sys.executable, '-m', 'benchmarks.targets', '--small', '',
       '--export-rows', '0', '--demo-runs', '0'],
      cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=paths.REPO),
      capture_output=True, text=True, timeout=300, check=False)
  assert done.returncode == 2
  assert 'nothing to measure: give --text' in done.stderr.splitlines()[-1]
