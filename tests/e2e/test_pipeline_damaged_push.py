"""End to end: damaged pushed versions and checkpoints never block the pipeline.

Real runs into one home: push version 1, truncate its variables (the next run
is validated without a baseline and pushes version 2), then flip bytes in the
checkpoint behind version 2 (`retrain` stops in one line; `run` warm-starts
from version 1's model instead, with a warning).
"""

import contextlib
import glob
import io
import os
import types

import pytest

from pipelines import demo_data
from pipelines.cli.main import main
from tests.support import validator_fixtures
from tests.support.tiny_pipeline import FAST
from tests.support.tiny_pipeline import TINY
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout


def _cli(home, *extra, command='run'):
  """(exit code, stdout, stderr) of `command` run in this process."""
  out, err = io.StringIO(), io.StringIO()
  with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    rc = main([command, '--data', str(home / 'data'), '--home',
               str(home / 'home')] +
              (FAST if command == 'run' else FAST[:-2]) + list(extra))
  return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope='module')
def home(tmp_path_factory):
  """Version 1 pushed, its variables truncated, then version 2 pushed; with
  what that second run printed. Every test starts from this."""
  root = tmp_path_factory.mktemp('damaged')
  demo_data.generate(str(root / 'data'), spans=2, seed=5, shape=TINY)
  rc, out, _ = _cli(root)
  assert rc == 0 and 'pushed: version 1' in out, out
  data = validator_fixtures.data_file(
      push_layout.version_dir(_root(root), 'serving', 1))
  os.truncate(data, 1000)
  second = _cli(root, '--set', 'seed=1')
  return types.SimpleNamespace(
      root=root, second=second,
      versions=push_layout.list_versions(_root(root), 'serving'))


def _root(home):
  return str(home / 'home' / 'pushed')


def test_damaged_served_version_is_no_baseline_and_a_new_one_is_pushed(home):
  rc, out, _ = home.second
  assert rc == 0, out
  assert ('warning: pushed baseline cannot be read (version 1: serving/1/'
          'variables/variables.data-00000-of-00001 is 1000 bytes, its '
          'manifest records ') in out
  assert 'no readable pushed version, so absolute thresholds only' in out
  assert 'pushed: version 2' in out
  assert home.versions == [1, 2]


def _flip_source_checkpoint(home, version):
  source = home_paths.resolve(push_layout.read_manifest(
      _root(home), 'serving', version)['source_model'], _root(home))
  checkpoint = model_layout.latest_checkpoint(source)
  [data] = glob.glob(checkpoint + '.data-*')
  validator_fixtures.flip_bytes(data, count=256)
  return source


def test_damaged_warm_start_base(home):
  root = home.root
  source = _flip_source_checkpoint(root, 2)
  demo_data.generate(str(root / 'data'), spans=1, first_span=3, seed=5,
                     shape=TINY)
  # retrain names the pushed model as its base: one line, nothing pushed.
  rc, out, err = _cli(root, command='retrain')
  assert rc == 2, out + err
  assert err.startswith(f'error: EmbeddingTrainer failed: warm start from '
                        f'{source}: checkpoint ')
  assert len(err.strip().splitlines()) == 1, err
  assert push_layout.list_versions(_root(root), 'serving') == [1, 2]
  # run warm-starts from the newest pushed version it can read.
  rc, out, _ = _cli(root, '--set', 'seed=2')
  assert rc == 0, out
  assert 'warning: warm start: pushed version 2 skipped: warm start from ' \
      f'{source}: checkpoint ' in out
  assert 'pushed: version 3' in out, out
