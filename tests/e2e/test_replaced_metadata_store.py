"""A home whose metadata.sqlite was deleted: the next run must train afresh
into new folders and leave the pushed version's model alone.

A new store numbers executions from 1 again; TFX names outputs after the
execution id, so without the store guard the new trainer wrote into the old
`model/3`, continued its checkpoint (0 steps trained, other settings) and the
pusher published it again.
"""

import json
import os
import subprocess
import sys

from pipelines import demo_data
from tests.support import paths
from tests.support import tiny_pipeline
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout

STEPS = ['--set', 'train_steps=150', '--set', 'batch_size=256', '--set',
         'dim=16', '--set', 'checkpoint_every=50', '--set',
         'regression_margin=0.5', '--neighbors', '0']


def _run(data, home, *extra):
  result = subprocess.run(
      [sys.executable, '-m', 'pipelines', 'run', '--data', data, '--home',
       home, *STEPS, *extra], cwd=paths.REPO, capture_output=True, text=True,
      timeout=600)
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]
  assert result.stderr == '', result.stderr
  return result.stdout


def _tree(path):
  """{relative path: (size, mtime)} of every file under `path`."""
  out = {}
  for directory, _, files in os.walk(path):
    for name in files:
      full = os.path.join(directory, name)
      out[os.path.relpath(full, path)] = (os.path.getsize(full),
                                          os.stat(full).st_mtime_ns)
  return out


def test_a_deleted_store_never_reuses_the_pushed_models_folder(tmp_path):
  data, home = str(tmp_path / 'data'), str(tmp_path / 'home')
  demo_data.generate(data, spans=1, seed=3, shape=tiny_pipeline.TINY)
  _run(data, home)
  root = os.path.join(home, 'pushed')
  first = home_paths.resolve(push_layout.read_manifest(
      root, 'serving', 1)['source_model'], root)
  before = _tree(first)
  os.remove(os.path.join(home, 'metadata.sqlite'))

  out = _run(data, home, '--set', 'window=1', '--set', 'negatives=1')
  assert 'warning: ' in out and 'executions continue from id' in out, out
  assert 'pushed: version 2' in out, out
  second = home_paths.resolve(push_layout.read_manifest(
      root, 'serving', 2)['source_model'], root)
  assert second != first
  trained = model_layout.read_metadata(second)
  assert trained['steps_this_run'] == 150 and trained['resumed_from_step'] == 0
  assert trained['trainer_config']['window'] == 1
  # The model version 1 was pushed from is untouched.
  assert _tree(first) == before
  with open(os.path.join(first, 'metadata.json')) as f:
    assert json.load(f)['trainer_config']['window'] != 1
