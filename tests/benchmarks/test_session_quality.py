"""session_quality: sessions from an events file, and the script end to end.
"""

import os
import re
import subprocess
import sys

import pytest

from benchmarks import run_arguments
from benchmarks import session_events
from tests.support import paths
from tests.support import tiny_inputs

HEADER = tiny_inputs.EVENTS_HEADER


def test_each_session_is_its_items_in_time_order(tmp_path):
  events = tmp_path / 'events.csv'
  # Rows out of order; b's two events at time 5 keep the file's order.
  events.write_text(HEADER + 'a,x,3\nb,p,5\na,y,1\nb,q,5\nc,z,7\nb,r,2\n')

  assert session_events.read(str(events)) == [['y', 'x'], ['r', 'p', 'q'],
                                              ['z']]


def test_the_last_item_is_held_out_and_one_event_sessions_left_out(tmp_path):
  long = [f'i{n}' for n in range(9)]
  sessions = session_events.write([long, ['solo'], ['u', 'v']],
                                  str(tmp_path / 'root'))

  with open(sessions.corpus_file, encoding='utf-8') as f:
    assert f.read() == ' '.join(long[:-1]) + '\nu\n'
  assert sessions.corpus_file == str(tmp_path / 'root' / 'span-1' /
                                     'corpus.txt')
  assert sessions.heldout == [(long[3:8], 'i8'), (['u'], 'v')]
  assert (sessions.events, sessions.items, sessions.skipped) == (9, 12, 1)


@pytest.mark.parametrize('text,problem', [
    ('session,item,time\na,x,1\n', 'the header must be'),
    (HEADER + 'a,x\n', 'line 2: expected 3 fields'),
    (HEADER + 'a,x,1\na,y,soon\n', "line 3: timestamp 'soon' is not a"),
    (HEADER + 'a,x y,1\n', "line 2: item 'x y' must be"),
])
def test_a_bad_events_file_is_named_with_its_line(tmp_path, text, problem):
  events = tmp_path / 'events.csv'
  events.write_text(text)
  with pytest.raises(ValueError, match=re.escape(problem)):
    session_events.read(str(events))


def test_an_events_file_must_be_named_and_exist(tmp_path):
  with pytest.raises(ValueError, match='expected NAME=PATH'):
    run_arguments.named_files([str(tmp_path / 'events.csv')], '--events')
  with pytest.raises(ValueError, match='no file'):
    run_arguments.named_files([f'shop={tmp_path}/missing.csv'], '--events')


@pytest.mark.slow
def test_the_script_prints_both_sides_and_the_passes_to_quality(tmp_path):
  events = tiny_inputs.walk_events(tmp_path / 'events.csv')
  done = subprocess.run(
      [sys.executable, '-m', 'benchmarks.session_quality', '--events',
       f'walks={events}', '--seeds', '1', '--epochs', '1',
       '--work', str(tmp_path / 'work')],
      cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=paths.REPO),
      capture_output=True, text=True, timeout=900, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  out = done.stdout
  assert '== walks: 240 sessions' in out, out
  number = r'\d+\.\d+ ±\d\.\d+'
  assert re.search(rf'pipeline, train split \(1 seeds\) +{number} +{number}',
                   out), out
  for workers in (2, 3):
    assert re.search(rf'gensim {workers} workers, train split +{number} +'
                     f'{number}', out), out
  assert re.search(rf'gensim 2 workers, all sequences +{number} +- ', out), out
  assert re.search(r'\n +1 +\d+\.\d +\d+\.\d\d +\d\.\d{3} +\d\.\d{3}', out), (
      out)
  assert re.search(r'to gensim HR@10 next \d\.\d{3} \(-0\.005\): '
                   r'(1 passes|not reached)', out), out
  assert os.path.isdir(tmp_path / 'work' / 'home-walks-1-passes')
