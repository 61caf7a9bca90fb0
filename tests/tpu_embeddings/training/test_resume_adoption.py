"""What resume.py adopts after a kill, and what it leaves alone.

A rerun continues a killed output only if the resume key matches (inputs and
settings, not URIs or the device), from its newest intact checkpoint, and only
once the killed run's process is gone; an unwritable resume root is a warning.
The kill-and-rerun runs themselves are in test_resume.py.
"""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest
from tfx.types import standard_artifacts

from pipelines import demo_data
from tests.support import artifact_fixtures as fx
from tests.support import killed_trainer
from tests.support.killed_trainer import TRAIN_STEPS
from tests.support.killed_trainer import trainer_props
from tests.support.killed_trainer import write_inputs
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import resume
from tpu_embeddings.training.config import TrainerConfig

# Each test shares a fixture that runs a trainer or pipeline in a subprocess.
pytestmark = pytest.mark.slow


@pytest.fixture(scope='module')
def killed(tmp_path_factory):
  """A trainer SIGKILLed after its 3rd checkpoint, with a resume root."""
  return killed_trainer.kill_after_3rd_checkpoint(
      str(tmp_path_factory.mktemp('killed')))


def _checkpoint_files(model):
  """(step, path prefix) of each `ckpt-<step>.index` in the model's
  checkpoint folder, newest first: read from the files, not from resume.py.
  """
  found = []
  for index in glob.glob(os.path.join(model_layout.checkpoint_dir(model),
                                      'ckpt-*.index')):
    prefix = index[:-len('.index')]
    found.append((int(prefix.rsplit('-', 1)[1]), prefix))
  return sorted(found, reverse=True)


def _key(root, examples='examples', base='', module_sha256='', **changes):
  artifact = standard_artifacts.Examples()
  artifact.uri = f'{root}/{examples}'
  return resume.resume_key(
      [artifact], 'train', vocabularies.read(f'{root}/vocabulary'), base,
      TrainerConfig.from_json(trainer_props(root, **changes)['config']),
      module_sha256)


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
  assert _key(root, module_sha256='0' * 64) != key
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
  saved = _checkpoint_files(model)
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
  alive = subprocess.Popen(
      [sys.executable, '-c', 'import time; time.sleep(60)'])
  try:
    root, key = _point(killed, model, alive.pid)
    assert resume.adopt(root, key, str(tmp_path / 'new1'), spec) is None
  finally:
    alive.kill()
    alive.wait()
  # Its owner is gone: the rerun takes the newest checkpoint.
  resumed = resume.adopt(root, key, str(tmp_path / 'new2'), spec)
  assert resumed.model_uri == model
  assert resumed.step == _checkpoint_files(model)[0][0]
  assert _checkpoint_files(str(tmp_path / 'new2'))[0][0] == resumed.step
  model_layout.write_metadata(model, {'steps': TRAIN_STEPS})
  assert resume.adopt(root, key, str(tmp_path / 'new3'), spec) is None


def _finished_pid() -> int:
  done = subprocess.Popen([sys.executable, '-c', 'pass'])
  done.wait()
  return done.pid


def test_a_run_stopped_between_adopting_and_claiming_is_resumed_again(
    killed, tmp_path):
  """A stop after the copy but before `claim` leaves the record naming the
  interrupted output: the next rerun adopts the same checkpoint from it."""
  model, spec = _copy_killed(killed, tmp_path)
  root, key = _point(killed, model, _finished_pid())
  first = resume.adopt(root, key, str(tmp_path / 'stopped'), spec)
  assert first is not None  # and the run stops here, before resume.claim
  again = resume.adopt(root, key, str(tmp_path / 'rerun'), spec)
  assert (again.model_uri, again.step) == (model, first.step)
  assert _checkpoint_files(str(tmp_path / 'rerun'))[0][0] == first.step


def test_an_unwritable_resume_root_is_a_warning_not_a_failure(tmp_path):
  blocked = tmp_path / 'resume'
  blocked.write_text('a file where the folder should be')
  resume.claim(str(blocked), 'k', str(tmp_path / 'model'), None)
  assert resume.read_pointer(str(blocked), 'k') is None
  assert blocked.read_text() == 'a file where the folder should be'
