"""SIGKILL a real `pipelines run` mid-training; the same command continues it.

TFX gives the rerun's trainer a new output folder; it must continue from the
killed execution's newest checkpoint, bless and push, and the killed
execution must be marked interrupted in ML Metadata.
"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

from ml_metadata.proto import metadata_store_pb2

from pipelines import demo_data
from pipelines.local import metadata_queries
from tests.support import paths
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.training import resume

REPO = paths.REPO
TINY = demo_data.CorpusShape(topics=4, tokens_per_topic=12, filler_tokens=6,
                             lines_per_span=300, related_per_topic=4)
TRAIN_STEPS = 2000
CHECKPOINT_EVERY = 100


def command(data, home):
  return [sys.executable, '-m', 'pipelines', 'run', '--data', data, '--home',
          home, '--neighbors', '0',
          '--set', f'train_steps={TRAIN_STEPS}', '--set', 'batch_size=256',
          '--set', 'dim=16', '--set', f'checkpoint_every={CHECKPOINT_EVERY}',
          '--set', 'regression_margin=0.5']


def checkpointed(home):
  """{model uri: step of its newest recorded checkpoint} under the home."""
  found = {}
  pattern = os.path.join(home, 'pipeline', 'EmbeddingTrainer', 'model', '*',
                         'checkpoint', 'checkpoint')
  for path in glob.glob(pattern):
    with open(path) as f:
      match = re.search(r'^model_checkpoint_path: "[^"]*ckpt-(\d+)"',
                        f.read(), re.M)
    if match:
      found[os.path.dirname(os.path.dirname(path))] = int(match.group(1))
  return found


def test_sigkilled_run_is_continued_by_the_same_command(tmp_path):
  data, home = str(tmp_path / 'data'), str(tmp_path / 'home')
  demo_data.generate(data, spans=1, seed=5, shape=TINY)
  process = subprocess.Popen(command(data, home), cwd=REPO,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             start_new_session=True)
  deadline = time.monotonic() + 240
  try:
    while not any(step > 0 for step in checkpointed(home).values()):
      assert process.poll() is None, 'the run ended before a checkpoint'
      assert time.monotonic() < deadline, 'no checkpoint within 240 s'
      time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
  finally:
    process.wait()
  (killed_model, killed_step), = checkpointed(home).items()
  assert 0 < killed_step < TRAIN_STEPS
  assert model_layout.read_metadata(killed_model) is None

  rerun = subprocess.run(command(data, home), cwd=REPO, capture_output=True,
                         text=True, timeout=480)
  assert rerun.returncode == 0, rerun.stdout + rerun.stderr[-3000:]
  assert 'validation: BLESSED' in rerun.stdout, rerun.stdout
  assert 'pushed: version 1' in rerun.stdout
  assert f'of interrupted {killed_model}' in rerun.stdout
  model = re.search(r'^model: (.*)$', rerun.stdout, re.M).group(1)
  assert model != killed_model
  meta = model_layout.read_metadata(model)
  assert meta['resumed_from'] == killed_model
  assert killed_step <= meta['resumed_from_step'] < TRAIN_STEPS
  assert meta['steps'] == TRAIN_STEPS
  assert meta['steps_this_run'] == TRAIN_STEPS - meta['resumed_from_step']
  assert meta['examples_seen'] == TRAIN_STEPS * 256
  root = os.path.join(home, 'pushed')
  assert home_paths.resolve(push_layout.read_manifest(
      root, 'serving', 1)['source_model'], root) == model
  assert os.listdir(os.path.join(home, 'pipeline', 'EmbeddingTrainer',
                                 'resume')) == []

  store = metadata_queries.open_store(home)
  execution, = store.get_executions_by_id([int(os.path.basename(
      killed_model))])
  assert execution.last_known_state == metadata_store_pb2.Execution.CANCELED
  assert metadata_queries.custom_property(execution, 'interrupted') == 1
  assert metadata_queries.custom_property(execution, 'resumed_by') == model
  assert not any(
      e.last_known_state == metadata_store_pb2.Execution.RUNNING
      for e in store.get_executions())
  assert metadata_queries.mark_interrupted(store, killed_model, model) is None
  with open(os.path.join(killed_model, resume.INTERRUPTED_FILENAME)) as f:
    assert json.load(f)['resumed_by'] == model
