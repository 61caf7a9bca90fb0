"""Kill the trainer with SIGKILL mid-run; a rerun continues the training.

On the same output (an in-process retry) the training loop resumes from the
output's own checkpoint; in a new output (what TFX gives a rerun) resume.py
finds the killed output through the resume root and continues from its
newest intact checkpoint, unless inputs or settings differ.
"""

import json
import os

import pytest

from tests.support import killed_trainer
from tests.support.killed_trainer import CHECKPOINT_EVERY
from tests.support.killed_trainer import TRAIN_STEPS
from tests.support.killed_trainer import checkpointed_step
from tests.support.killed_trainer import kill_when
from tests.support.killed_trainer import run_in_process
from tests.support.killed_trainer import start_trainer
from tests.support.killed_trainer import trainer_props
from tests.support.killed_trainer import write_inputs
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.training import resume


@pytest.mark.slow
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


@pytest.fixture(scope='module')
def killed(tmp_path_factory):
  """A trainer SIGKILLed after its 3rd checkpoint, with a resume root."""
  return killed_trainer.kill_after_3rd_checkpoint(
      str(tmp_path_factory.mktemp('killed')))


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
