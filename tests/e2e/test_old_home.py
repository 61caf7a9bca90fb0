"""A home written before the library package was split out still works:
`pushed`, `embed`, `lineage` read it and `retrain` continues it."""

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from pipelines import demo_data
from tests.support import paths
from tests.support.tiny_pipeline import TINY

FIXTURE = os.path.join(paths.REPO, 'tests', 'fixtures', 'home_v0.tar.gz')
# Where the fixture was made: ML Metadata records absolute artifact URIs.
ROOT = '/tmp/tpu-embeddings-home-fixture-v0'


def _cli(*argv):
  done = subprocess.run([sys.executable, '-m', 'pipelines'] + list(argv),
                        cwd=paths.REPO, capture_output=True, text=True,
                        timeout=900)
  assert done.returncode == 0, done.stderr[-3000:]
  assert not [l for l in done.stderr.splitlines() if l.startswith('error')]
  return done.stdout


@pytest.fixture(scope='module')
def old_home():
  # The fixture's place is fixed: test runs of two checkouts on one machine
  # take turns with it.
  with open(ROOT + '.lock', 'w') as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    shutil.rmtree(ROOT, ignore_errors=True)
    with tarfile.open(FIXTURE) as tar:
      tar.extractall(os.path.dirname(ROOT))
    yield {'data': os.path.join(ROOT, 'data'),
           'home': os.path.join(ROOT, 'home')}
    shutil.rmtree(ROOT, ignore_errors=True)


def test_pushed_embed_and_lineage_read_the_old_home(old_home):
  listed = json.loads(_cli('pushed', '--home', old_home['home'], '--json'))
  assert [v['version'] for v in listed] == [1] and not listed[0]['damaged']
  out = json.loads(_cli('embed', '--home', old_home['home'], '--json',
                        'city-kane food-rice'))
  assert out['version'] == 1 and len(out['embeddings'][0]['vector']) == 8
  trace = json.loads(_cli('lineage', '--home', old_home['home'], '--json'))
  assert trace['version'] == 1
  assert trace['spans'] == [1], trace


def test_retrain_continues_the_old_home_with_a_new_span(old_home):
  demo_data.generate(old_home['data'], spans=1, first_span=2, seed=5,
                     shape=TINY)
  out = _cli('retrain', '--data', old_home['data'], '--home',
             old_home['home'], '--set', 'train_steps=150', '--set',
             'batch_size=256', '--set', 'dim=8', '--set',
             'checkpoint_every=100', '--set', 'regression_margin=0.5',
             '--set', 'projector_tokens=0')
  assert 'pushed: version 2' in out, out
  trace = json.loads(_cli('lineage', '--home', old_home['home'], '--json'))
  assert trace['version'] == 2 and trace['spans'] == [2], trace
  listed = json.loads(_cli('pushed', '--home', old_home['home'], '--json'))
  assert [v['version'] for v in listed] == [1, 2]
