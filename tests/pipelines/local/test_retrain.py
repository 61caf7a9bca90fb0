import os

import pytest

from pipelines.local import retrain


def test_span_regex_and_latest_span(tmp_path):
  for name in ('span-1', 'span-2', 'span-10', 'span-x', 'other'):
    (tmp_path / name).mkdir()
    (tmp_path / name / 'a.txt').write_text('a b\n')
  (tmp_path / 'span-11').mkdir()  # empty folder: not a landed span
  assert retrain.latest_data_span(str(tmp_path), 'span-{SPAN}/*') == 10
  assert retrain.span_regex('data/day-{SPAN:3}/*.txt').match('day-007')
  with pytest.raises(ValueError, match='has no {SPAN}'):
    retrain.span_regex('all/*')


def test_nothing_pushed_means_run(tmp_path):
  (tmp_path / 'span-1').mkdir()
  (tmp_path / 'span-1' / 'a.txt').write_text('a\n')
  d = retrain.decide(str(tmp_path), str(tmp_path / 'pushed'), 'span-{SPAN}/*')
  assert d.run and d.data_span == 1 and not d.warm_start_uri


def test_no_span_means_no_run(tmp_path):
  d = retrain.decide(str(tmp_path), str(tmp_path / 'pushed'), 'span-{SPAN}/*')
  assert not d.run and 'no span folders' in d.reason
  with pytest.raises(FileNotFoundError):
    retrain.decide(str(tmp_path / 'missing'), str(tmp_path), 'span-{SPAN}/*')


def test_lock_is_exclusive_and_released(tmp_path):
  with retrain.RetrainLock(str(tmp_path)):
    with pytest.raises(retrain.LockHeld, match=f'pid {os.getpid()}'):
      with retrain.RetrainLock(str(tmp_path)):
        pass
  with retrain.RetrainLock(str(tmp_path)):
    pass
