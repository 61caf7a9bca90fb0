"""What a training keeps when it fails, and which training owns an output.

A TFX launcher deletes the outputs of a failed execution (the portable
launcher of LocalDagRunner does; Kubeflow's leaves them). The checkpoints of
a trainer that failed after hours, on a full disk say, are not garbage: on
any exception the trainer moves its checkpoint folder out of its output to

    <resume_root>/<key>.kept/checkpoint/

(`key` is the training's resume key: resume.py; the record naming the
output gives it) and points the resume record at it, so the rerun with the
same inputs and settings continues from its newest intact checkpoint. The
move is a rename on local disk and needs no free space. Should the record
not be writable (the disk is full), the rerun still finds the folder by its
name. It is deleted once a training of
that key completes.

An output folder that already holds checkpoints when training starts is
continued only if `training_key.txt` beside them names the same key: a
folder reused by an orchestrator (ML Metadata replaced, execution ids
restarting) holds another training's checkpoints and is refused.
"""

import contextlib
import json
from typing import Iterator, Optional

import tensorflow as tf
from absl import logging

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.core import file_system
from tpu_embeddings.training import resume

KEY_FILENAME = 'training_key.txt'


def has_checkpoints(model_uri: str) -> bool:
  return bool(tf.io.gfile.glob(
      model_layout.join(model_layout.checkpoint_dir(model_uri), '*.index')))


def check_owner(model_uri: str, key: str):
  """Raises unless `model_uri` holds no checkpoint or this training's."""
  if not has_checkpoints(model_uri):
    return
  path = model_layout.join(model_uri, KEY_FILENAME)
  found = ''
  if tf.io.gfile.exists(path):
    with tf.io.gfile.GFile(path) as f:
      found = f.read().strip()
  if found != key:
    raise ValueError(
        f'EmbeddingTrainer: output {model_uri} already holds checkpoints of '
        'another training (other inputs or settings, or a folder reused '
        'after ML Metadata was replaced); refusing to continue or delete '
        'them: give the trainer a new output folder')


def write_owner(model_uri: str, key: str):
  with tf.io.gfile.GFile(model_layout.join(model_uri, KEY_FILENAME), 'w') as f:
    f.write(key + '\n')


def _claimed_by(resume_root: str, model_uri: str):
  """(key, record) of the resume record naming `model_uri`, or None."""
  for path in tf.io.gfile.glob(model_layout.join(resume_root, '*.json')):
    try:
      with tf.io.gfile.GFile(path) as f:
        record = json.load(f)
    except (ValueError, tf.errors.OpError):
      continue
    if isinstance(record, dict) and record.get('model_uri') == model_uri:
      return path.rsplit('/', 1)[-1][:-len('.json')], record
  return None


def keep(resume_root: str, model_uri: str) -> Optional[str]:
  """Moves the checkpoints of a failed training to its `resume.kept_dir`
  and points its resume record there; the folder, or None when there was
  nothing to keep or it could not be moved."""
  claimed = _claimed_by(resume_root, model_uri) if resume_root else None
  if not claimed or not has_checkpoints(model_uri):
    return None
  key, record = claimed
  target = resume.kept_dir(resume_root, key)
  try:
    file_system.remove_tree(target)  # an older failure's, copied already
    file_system.makedirs(target)
    file_system.move_dir(model_layout.checkpoint_dir(model_uri),
                         model_layout.checkpoint_dir(target))
  except (OSError, tf.errors.OpError) as e:
    logging.warning('Trainer: cannot keep the checkpoints of %s (%s)',
                    model_uri, e)
    return None
  # Where the disk is full this may fail; the rerun finds `target` anyway.
  resume.claim(resume_root, key, target, record.get('warm_start'))
  return target


@contextlib.contextmanager
def kept_on_failure(resume_root: str, model_uri: str) -> Iterator[None]:
  """Within the block, an exception keeps the training's checkpoints
  (`keep`) before it propagates.

  Interrupts (KeyboardInterrupt, a stop signal) leave them in place: no
  launcher deletes the output of an interrupted execution, and its resume
  record names it already.
  """
  try:
    yield
  except Exception:
    target = keep(resume_root, model_uri)
    if target:
      logging.warning('Trainer failed; its checkpoints are kept in %s for '
                      'the rerun', target)
    raise


def discard(resume_root: str, key: str):
  """Deletes the kept checkpoints of `key` (its training completed)."""
  if resume_root:
    file_system.remove_tree(resume.kept_dir(resume_root, key),
                            ignore_errors=True)
