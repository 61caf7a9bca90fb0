"""Ranges written by forked processes: the files Beam writes, errors as Beam's.
"""

import os
import time

import pytest
from tfx.types import standard_artifacts

from components.corpus_example_gen import component
from components.corpus_example_gen import executor
from components.corpus_example_gen import parallel
from components.corpus_example_gen import ranges


def _corpus(base, bad_tail=b''):
  d = base / 'span-1'
  d.mkdir(parents=True)
  lines = [f'w{i} w{i % 7} w{i % 3} café' for i in range(3000)]
  (d / 'a.txt').write_text('\n'.join(lines[:1800]) + '\n\n')
  (d / 'b.txt').write_bytes('\n'.join(lines[1800:]).encode() + bad_tail)
  return d


def _do(base, out):
  gen = component.corpus_example_gen(str(base))
  props = dict(gen.exec_properties)
  props['span'] = 1
  props['input_config'] = props['input_config'].replace('span-{SPAN}',
                                                        'span-1')
  examples = standard_artifacts.Examples()
  examples.uri = str(out)
  executor.Executor().Do({}, {'examples': [examples]}, props)


def _files(root):
  return {str(p.relative_to(root)): p.read_bytes()
          for p in sorted(root.rglob('*')) if p.is_file()}


@pytest.fixture
def small_ranges(monkeypatch):
  monkeypatch.setattr(ranges, 'MIN_RANGE_BYTES', 5000)


def test_processes_write_the_files_beam_writes(tmp_path, monkeypatch,
                                               small_ranges):
  _corpus(tmp_path / 'data')
  monkeypatch.setattr(executor.Executor, '_in_process', lambda self: False)
  _do(tmp_path / 'data', tmp_path / 'beam')
  monkeypatch.undo()
  monkeypatch.setattr(ranges, 'MIN_RANGE_BYTES', 5000)
  _do(tmp_path / 'data', tmp_path / 'serial')  # below MIN_PARALLEL_BYTES
  monkeypatch.setattr(parallel, 'MIN_PARALLEL_BYTES', 0)
  monkeypatch.setattr(parallel, 'cores', lambda: 2)
  _do(tmp_path / 'data', tmp_path / 'forked')
  beam = _files(tmp_path / 'beam')
  assert len([f for f in beam if f.startswith('Split-train/')]) > 4
  assert _files(tmp_path / 'serial') == beam
  assert _files(tmp_path / 'forked') == beam


def test_a_bad_file_in_a_worker_is_the_one_line_error(tmp_path, monkeypatch,
                                                      small_ranges):
  past_first_chunk = b'\nalpha beta gamma' * (executor.FIRST_CHUNK_BYTES // 17)
  d = _corpus(tmp_path / 'data',
              bad_tail=past_first_chunk + b'\ncaf\xe9 au lait\n')
  monkeypatch.setattr(parallel, 'MIN_PARALLEL_BYTES', 0)
  monkeypatch.setattr(parallel, 'cores', lambda: 2)
  with pytest.raises(ValueError) as e:
    _do(tmp_path / 'data', tmp_path / 'examples')
  assert str(e.value) == (
      f'corpus ExampleGen: {d / "b.txt"} is not UTF-8 text (invalid UTF-8 '
      '(byte 0xe9 at offset 3) of a line); convert it (e.g. iconv -t UTF-8) '
      'or move it out of the input')
  assert not [p for p in (tmp_path / 'examples').rglob('*') if p.is_file()]
  assert not list((tmp_path / 'examples').rglob('.*'))


def _twice_or_exit_in_a_worker(element, parent=os.getpid()):  # noqa: B008
  time.sleep(0.05)  # both processes get some
  if element == 3 and os.getpid() != parent:
    os._exit(1)
  return element * 2


def _slowly_twice(element):
  time.sleep(0.05)  # both processes get some
  return element * 2


def test_results_come_in_order_from_both_processes():
  assert parallel.run(_slowly_twice, list(range(9)), 2) == [
      2 * i for i in range(9)]


def test_a_worker_that_dies_is_named():
  with pytest.raises(parallel.WorkerDied) as e:
    for _ in range(20):  # until a worker (not this process) takes element 3
      parallel.run(_twice_or_exit_in_a_worker, [1, 3, 5, 7], 2,
                   describe=lambda x: f'file-{x}')
  assert 'file-3' in str(e.value) and '\n' not in str(e.value)


def test_small_corpora_stay_in_this_process():
  assert parallel.workers_for([('a', 0, parallel.MIN_PARALLEL_BYTES - 1)]) == 1
  big = [('a', 0, parallel.MIN_PARALLEL_BYTES), ('b', 0, 10)]
  assert parallel.workers_for(big) == min(2, parallel.cores())


@pytest.mark.parametrize('args, in_process', [
    ([], True),
    (['--runner=DirectRunner'], True),
    (['--direct_running_mode=multi_processing', '--direct_num_workers=2'],
     False),
    (['--runner=DataflowRunner', '--project=p'], False),
])
def test_only_beam_in_this_process_is_replaced(args, in_process):
  gen = executor.Executor()
  gen._beam_pipeline_args = args
  assert gen._in_process() == in_process


def test_fork_noise_is_dropped_and_the_rest_kept(capfd):
  with parallel._forking_quietly():
    os.write(2, b'I0000 fork_posix.cc:77] Other threads are currently calling '
                b'into gRPC, skipping fork() handlers\nkept\n')
  assert capfd.readouterr().err == 'kept\n'
