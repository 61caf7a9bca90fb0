"""Smoke test of benchmarks/table_scale.py at a tiny size, the Kubeflow
memory estimates against the peaks it measures there, and the peak memory
it reports (benchmarks/process_memory.py)."""

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
  assert 300 << 20 <= alone.tree_peak_bytes < 400 << 20
  # Two processes of 300 MB each, but each file page once. (Their
  # ru_maxrss starts from this test process's memory at the fork.)
  assert 600 << 20 <= two.tree_peak_bytes < 700 << 20
  assert two.peak_bytes >= two.tree_peak_bytes


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
  # component..., seconds, peak GiB, state GiB, peak/state, above 1.5x,
  # pod GB, peak/pod, bound
  found = {' '.join(r[1:-8]): r[-8:] for r in rows}
  assert list(found) == [
      'trainer', 'validator', 'exporter', 'pusher', 'validator+base',
      'pushed --verify', 'embed', 'neighbors', 'saved_model_cli',
      'neighbors/query']
  for name, (seconds, peak, _, _, _, pod, _, _) in found.items():
    assert float(seconds) > 0 and float(peak) > 0, name
    # The Kubeflow estimate fits the measured peak with a fifth to spare.
    if pod != '-':
      assert float(peak) * 2**30 <= 0.8 * float(pod) * 1e9, name
  assert any('neighbors ms/query' in l for l in done.stdout.splitlines())
