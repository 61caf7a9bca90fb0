"""Kill the trainer with SIGKILL mid-run; a rerun continues the training.

On the same output (an in-process retry) the training loop resumes from the
output's own checkpoint; in a new output (what TFX gives a rerun) resume.py
finds the killed output through the resume root and continues from its
newest intact checkpoint, unless inputs or settings differ.
"""

import collections
import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from tfx.types import standard_artifacts

from components import artifact_types
from components import keys
from components.trainer import executor
from components.trainer import resume
from components.trainer.config import TrainerConfig
from pipelines import demo_data
from tests.support import artifact_fixtures as fx
from tests.support import paths
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

REPO = paths.REPO
TRAIN_STEPS = 3000
CHECKPOINT_EVERY = 100

# Trains in a child process, to be killed: run_in_process(root, props, model).
RUNNER = ('import json, sys; sys.path.insert(0, sys.argv[1]); '
          'from tests.components.trainer import test_resume as t; '
          't.run_in_process(sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])')


def start_trainer(root, props, model):
  return subprocess.Popen(
      [sys.executable, '-c', RUNNER, REPO, root, json.dumps(props), model],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_when(process, reached, what):
  """SIGKILLs `process` once `reached()` is true."""
  deadline = time.monotonic() + 240
  try:
    while not reached():
      assert process.poll() is None, f'trainer exited before {what}'
      assert time.monotonic() < deadline, f'no {what} within 240 s'
      time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
  finally:
    process.wait()
  assert process.returncode == -signal.SIGKILL


def checkpointed_step(model_uri):
  """Step of the newest checkpoint the manager has recorded, or None."""
  path = os.path.join(model_layout.checkpoint_dir(model_uri), 'checkpoint')
  try:
    with open(path) as f:
      match = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', f.read(),
                        re.M)
  except FileNotFoundError:
    return None
  return int(match.group(1)) if match else None


def test_sigkill_then_rerun_resumes_from_the_latest_checkpoint(tmp_path):
  root = str(tmp_path)
  write_inputs(root)
  props = trainer_props(root, resume_root='')
  model = f'{root}/model'
  kill_when(start_trainer(root, props, 'model'),
            lambda: checkpointed_step(model) is not None, 'a 1st checkpoint')
  killed_at = checkpointed_step(model)
  assert CHECKPOINT_EVERY <= killed_at < TRAIN_STEPS
  assert killed_at % CHECKPOINT_EVERY == 0
  assert model_layout.read_metadata(model) is None  # the run is incomplete

  meta = run_in_process(root, props, 'model')
  assert meta['resumed_from_step'] == killed_at
  assert meta['steps'] == TRAIN_STEPS
  assert meta['steps_this_run'] == TRAIN_STEPS - killed_at
  assert meta['examples_seen'] == TRAIN_STEPS * 64
  assert checkpointed_step(model) == TRAIN_STEPS


def write_inputs(root, span=1):
  lines = [l.split() for l in demo_data.span_lines(span)]
  fx.write_examples(f'{root}/examples', {'train': lines})
  fx.write_vocabulary(f'{root}/vocabulary',
                      collections.Counter(t for l in lines for t in l))


def trainer_props(root, resume_root=None, **changes):
  values = {
      'embedding_spec': skipgram_spec(dim=8, learning_rate=0.3).to_json(),
      'batch_size': 64, 'train_steps': TRAIN_STEPS, 'epochs': 0,
      'checkpoint_every': CHECKPOINT_EVERY, 'log_every': 50,
  }
  values.update(changes)
  return {'config': json.dumps(values), keys.RESUME_ROOT:
          f'{root}/resume' if resume_root is None else resume_root}


def run_in_process(root, props, model, examples='examples'):
  def artifact(cls, name):
    a = cls()
    a.uri = f'{root}/{name}'
    return a
  executor.Executor().Do(
      {'examples': [artifact(standard_artifacts.Examples, examples)],
       'vocabulary': [artifact(artifact_types.Vocabulary, 'vocabulary')]},
      {'model': [artifact(standard_artifacts.Model, model)],
       'model_run': [artifact(standard_artifacts.ModelRun, model + '-run')]},
      props)
  return model_layout.read_metadata(f'{root}/{model}')


@dataclasses.dataclass
class Killed:
  root: str
  props: dict
  step: int      # newest checkpoint the manager recorded before the kill
  pointers: dict  # resume root file name -> text, as the kill left them

  def restore_pointers(self):
    for name, text in self.pointers.items():
      with open(f'{self.root}/resume/{name}', 'w') as f:
        f.write(text)


@pytest.fixture(scope='module')
def killed(tmp_path_factory):
  """A trainer SIGKILLed after its 3rd checkpoint, with a resume root."""
  root = str(tmp_path_factory.mktemp('killed'))
  write_inputs(root)
  props = trainer_props(root)
  kill_when(start_trainer(root, props, 'model'),
            lambda: (checkpointed_step(f'{root}/model') or 0) >= (
                3 * CHECKPOINT_EVERY), 'a 3rd checkpoint')
  step = checkpointed_step(f'{root}/model')
  assert step < TRAIN_STEPS
  pointers = {}
  for name in os.listdir(f'{root}/resume'):
    with open(f'{root}/resume/{name}') as f:
      pointers[name] = f.read()
  assert len(pointers) == 1, pointers
  assert json.loads(next(iter(pointers.values())))['model_uri'] == (
      f'{root}/model')
  return Killed(root, props, step, pointers)


def test_rerun_in_a_new_output_continues_the_killed_training(killed):
  killed.restore_pointers()
  meta = run_in_process(killed.root, killed.props, 'rerun')
  assert meta['resumed_from'] == f'{killed.root}/model'
  # The newest checkpoint, possibly one saved just before the kill landed.
  assert killed.step <= meta['resumed_from_step'] < TRAIN_STEPS
  assert meta['resumed_from_step'] % CHECKPOINT_EVERY == 0
  assert meta['steps'] == TRAIN_STEPS
  assert meta['steps_this_run'] == TRAIN_STEPS - meta['resumed_from_step']
  assert meta['examples_seen'] == TRAIN_STEPS * 64
  assert os.listdir(f'{killed.root}/resume') == []  # done: pointer removed
  assert model_layout.read_metadata(f'{killed.root}/model') is None
  path = f'{killed.root}/model/{resume.INTERRUPTED_FILENAME}'
  with open(path) as f:
    mark = json.load(f)
  os.remove(path)  # the killed model as the kill left it, for other tests
  assert mark['resumed_by'] == f'{killed.root}/rerun'
  assert mark['resumed_from_step'] == meta['resumed_from_step']


def test_rerun_with_another_seed_starts_from_step_0(killed):
  killed.restore_pointers()
  meta = run_in_process(killed.root, trainer_props(killed.root, seed=1),
                        'other-seed')
  assert meta['resumed_from'] is None
  assert meta['resumed_from_step'] == 0
  assert meta['steps_this_run'] == TRAIN_STEPS
  # The killed run's pointer is kept for a rerun with its own settings.
  assert sorted(os.listdir(f'{killed.root}/resume')) == sorted(
      killed.pointers)


def _key(root, examples='examples', base='', **changes):
  artifact = standard_artifacts.Examples()
  artifact.uri = f'{root}/{examples}'
  return resume.resume_key(
      [artifact], 'train', vocabulary_file.read(f'{root}/vocabulary'), base,
      TrainerConfig.from_json(trainer_props(root, **changes)['config']))


def test_key_follows_inputs_and_settings_not_uris_or_the_device(tmp_path):
  root = str(tmp_path)
  write_inputs(root)
  key = _key(root)
  shutil.copytree(f'{root}/examples', f'{root}/same-examples')
  assert _key(root, examples='same-examples') == key
  assert _key(root, tpu='grpc://10.0.0.2:8470') == key
  fx.write_examples(f'{root}/other-examples',
                    {'train': [l.split() for l in demo_data.span_lines(2)]})
  assert _key(root, examples='other-examples') != key
  assert _key(root, seed=1) != key
  assert _key(root, train_steps=TRAIN_STEPS + 1) != key
  assert _key(root, base=f'{root}/base') != key
  vocabulary = vocabulary_file.read(f'{root}/vocabulary')
  vocabulary_file.write(f'{root}/vocabulary', vocabulary_file.TokenCounts(
      vocabulary.tokens, (vocabulary.counts[0] + 1,) + vocabulary.counts[1:]))
  assert _key(root) != key


def _copy_killed(killed, tmp_path):
  copy = str(tmp_path / 'model')
  shutil.copytree(f'{killed.root}/model', copy)
  return copy, EmbeddingSpec.load(copy)


def _damage(path, how):
  data = sorted(glob.glob(f'{path}.data-*'))[0]
  if how == 'index':
    os.truncate(f'{path}.index', os.path.getsize(f'{path}.index') // 2)
  elif how == 'truncate':
    os.truncate(data, os.path.getsize(data) // 2)
  else:
    with open(data, 'r+b') as f:
      f.seek(os.path.getsize(data) // 2)
      byte = f.read(1)
      f.seek(-1, os.SEEK_CUR)
      f.write(bytes([byte[0] ^ 0xFF]))


@pytest.mark.parametrize('how', ['index', 'truncate', 'flip'])
def test_a_damaged_newest_checkpoint_falls_back_to_the_one_before(
    killed, tmp_path, how):
  model, spec = _copy_killed(killed, tmp_path)
  saved = resume.saved_checkpoints(model)
  assert len(saved) >= 2, saved
  (newest, newest_path), (older, older_path) = saved[:2]
  assert resume.newest_intact(model, spec) == (newest, newest_path)
  _damage(newest_path, how)
  assert resume.newest_intact(model, spec) == (older, older_path)


def _point(killed, model, pid):
  key = os.path.splitext(next(iter(killed.pointers)))[0]
  pointer = json.loads(next(iter(killed.pointers.values())))
  pointer.update(model_uri=model, pid=pid)
  root = os.path.dirname(model)
  os.makedirs(f'{root}/resume', exist_ok=True)
  with open(resume.pointer_path(f'{root}/resume', key), 'w') as f:
    json.dump(pointer, f)
  return f'{root}/resume', key


def test_a_live_owner_or_a_completed_model_is_not_resumed(killed, tmp_path):
  model, spec = _copy_killed(killed, tmp_path)
  alive = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
  try:
    root, key = _point(killed, model, alive.pid)
    assert resume.adopt(root, key, str(tmp_path / 'new1'), spec) is None
  finally:
    alive.kill()
    alive.wait()
  # Its owner is gone: the rerun takes the newest checkpoint.
  resumed = resume.adopt(root, key, str(tmp_path / 'new2'), spec)
  assert resumed.model_uri == model
  assert resumed.step == resume.saved_checkpoints(model)[0][0]
  assert resume.saved_checkpoints(str(tmp_path / 'new2'))[0][0] == (
      resumed.step)
  model_layout.write_metadata(model, {'steps': TRAIN_STEPS})
  assert resume.adopt(root, key, str(tmp_path / 'new3'), spec) is None


def test_a_warm_started_rerun_keeps_the_warm_start_report(killed):
  """The killed run wrote the warm start; the rerun reports it, not redoes."""
  root = killed.root
  props = trainer_props(root, resume_root=f'{root}/resume-warm',
                        warm_start_uri=f'{root}/model')
  # None, then the warm start's step 0, then the 1st trained checkpoint.
  kill_when(start_trainer(root, props, 'warm'),
            lambda: checkpointed_step(f'{root}/warm'), 'a checkpoint')
  meta = run_in_process(root, props, 'warm-rerun')
  assert meta['resumed_from'] == f'{root}/warm'
  assert meta['resumed_from_step'] > 0
  assert meta['warm_start']['base_model'] == f'{root}/model'
  assert meta['warm_start']['kept_tokens'] > 0
  assert meta['steps'] == TRAIN_STEPS


def test_an_unwritable_resume_root_is_a_warning_not_a_failure(tmp_path):
  blocked = tmp_path / 'resume'
  blocked.write_text('a file where the folder should be')
  resume.claim(str(blocked), 'k', str(tmp_path / 'model'), None)
  assert resume.read_pointer(str(blocked), 'k') is None
  assert blocked.read_text() == 'a file where the folder should be'
