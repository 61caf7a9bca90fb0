"""Smoke test of benchmarks/table_scale.py at a tiny size, and of the peak
memory it reports (benchmarks/process_memory.py)."""

import os
import subprocess
import sys

import pytest

from benchmarks import process_memory
from tests.support import paths

_HOLD = r'''
import subprocess, sys, time
import numpy as np
held = np.ones(int(sys.argv[1]) << 20, np.uint8)
if len(sys.argv) > 2:  # and a child holding as much, at the same time
  subprocess.run([sys.executable, '-c', sys.argv[2], sys.argv[1]], check=True)
else:
  time.sleep(0.5)
'''


@pytest.mark.slow
def test_the_peak_counts_every_process_of_the_tree():
  alone = process_memory.run([sys.executable, '-c', _HOLD, '300'])
  two = process_memory.run([sys.executable, '-c', _HOLD, '300', _HOLD])
  assert alone.returncode == two.returncode == 0
  assert 300 << 20 <= alone.peak_bytes < 400 << 20
  # Two processes of 300 MB each, but each file page once.
  assert 600 << 20 <= two.tree_peak_bytes < 700 << 20
  assert two.own_peak_bytes < 400 << 20


@pytest.mark.slow
def test_every_component_is_measured_at_a_tiny_size(tmp_path):
  env = dict(os.environ, PYTHONPATH=paths.REPO)
  done = subprocess.run(
      [sys.executable, '-m', 'benchmarks.table_scale', '--sizes', '0.002',
       '--train-steps', '3', '--train-tokens', '20000', '--queries', '2',
       '--work', str(tmp_path)],
      cwd=paths.REPO, env=env, capture_output=True, text=True, timeout=1800,
      check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  rows = [line.split() for line in done.stdout.splitlines()
          if line.split()[:1] == ['0.002M'] and line.split()[-1] in (
              'ok', 'OVER')]
  components = [' '.join(r[1:-6]) for r in rows]
  assert components == [
      'trainer', 'validator', 'exporter', 'pusher', 'validator+base',
      'pushed --verify', 'embed', 'neighbors', 'saved_model_cli',
      'neighbors/query']
  for r in rows:
    assert float(r[-6]) > 0 and float(r[-5]) > 0.3  # seconds, peak GiB
  assert any('neighbors ms/query' in l for l in done.stdout.splitlines())
