"""A trainer that fails mid-training keeps its checkpoints; the rerun resumes.

TFX's portable launcher (LocalDagRunner's) deletes the outputs of a failed
execution: before kept.py, a disk that filled up mid-training took every
checkpoint with it and left a resume record naming nothing. Here the disk
fills at the third checkpoint (TensorFlow's own error for ENOSPC), the
launcher's own `remove_output_dirs` runs, and the rerun must continue.
"""

import glob
import json
import os
import re

import pytest
import tensorflow as tf
from tfx.orchestration.portable import outputs_utils
from tfx.types import standard_artifacts

from tests.support.killed_trainer import run_in_process
from tests.support.killed_trainer import trainer_props
from tests.support.killed_trainer import write_inputs

STEPS = 400
EVERY = 100


def _steps_in(directory):
  """Checkpoint steps whose index file is in `directory`, newest first."""
  return sorted((int(re.match(r'ckpt-(\d+)\.index$', os.path.basename(p))[1])
                 for p in glob.glob(os.path.join(directory, 'ckpt-*.index'))),
                reverse=True)


def _fill_disk_at_save(monkeypatch, failing_save):
  save = tf.train.CheckpointManager.save
  calls = []

  def full_disk_save(manager, *args, **kwargs):
    calls.append(1)
    if len(calls) == failing_save:
      raise tf.errors.ResourceExhaustedError(
          None, None, f'{manager.directory}/ckpt-x_temp; No space left on '
          'device')
    return save(manager, *args, **kwargs)
  monkeypatch.setattr(tf.train.CheckpointManager, 'save', full_disk_save)


def _launcher_cleanup(root):
  """What TFX's launcher does with a failed execution's outputs."""
  outputs = {}
  for key, cls, name in (('model', standard_artifacts.Model, 'model'),
                         ('model_run', standard_artifacts.ModelRun,
                          'model-run')):
    artifact = cls()
    artifact.uri = f'{root}/{name}'
    outputs[key] = [artifact]
  outputs_utils.remove_output_dirs(outputs)


def _train_until_the_disk_fills(root, monkeypatch, failing_save):
  """A training whose `failing_save`-th checkpoint meets a full disk; its
  properties."""
  write_inputs(root)
  props = trainer_props(root, train_steps=STEPS, checkpoint_every=EVERY,
                        checkpoint_seconds=3600)
  with monkeypatch.context() as patch:
    _fill_disk_at_save(patch, failing_save)
    with pytest.raises(tf.errors.ResourceExhaustedError):
      run_in_process(root, props, 'model')
  return props


@pytest.mark.slow
def test_a_full_disk_keeps_the_checkpoints_and_the_rerun_resumes(
    tmp_path, monkeypatch):
  root = str(tmp_path)
  props = _train_until_the_disk_fills(root, monkeypatch, failing_save=3)
  _launcher_cleanup(root)
  assert not os.path.exists(f'{root}/model')

  kept, = glob.glob(f'{root}/resume/*.kept')
  steps = _steps_in(f'{kept}/checkpoint')
  assert steps and 0 < steps[0] < STEPS, steps
  pointer, = glob.glob(f'{root}/resume/*.json')
  with open(pointer) as f:
    assert json.load(f)['model_uri'] == kept

  meta = run_in_process(root, props, 'rerun')
  assert meta['resumed_from_step'] == steps[0]
  assert meta['steps'] == STEPS
  assert meta['steps_this_run'] == STEPS - steps[0]
  assert os.listdir(f'{root}/resume') == []  # done: record and copy gone


@pytest.mark.slow
def test_a_kept_copy_is_found_even_when_its_record_could_not_be_written(
    tmp_path, monkeypatch):
  """On a full disk the record may still name the deleted output."""
  root = str(tmp_path)
  props = _train_until_the_disk_fills(root, monkeypatch, failing_save=2)
  # The record as a failed rewrite leaves it: naming the deleted output.
  pointer, = glob.glob(f'{root}/resume/*.json')
  with open(pointer) as f:
    record = json.load(f)
  record['model_uri'] = f'{root}/model'
  with open(pointer, 'w') as f:
    json.dump(record, f)
  _launcher_cleanup(root)
  kept, = glob.glob(f'{root}/resume/*.kept')
  step = _steps_in(f'{kept}/checkpoint')[0]
  meta = run_in_process(root, props, 'rerun')
  assert meta['resumed_from_step'] == step > 0
