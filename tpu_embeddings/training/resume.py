"""Resuming an interrupted training in a rerun's new output folder.

TFX gives every execution a new output (`.../EmbeddingTrainer/model/<id>/`),
so after a crash the rerun never sees the checkpoints of the run it repeats.
The trainer therefore leaves a pointer in a stable place, keyed by what it
trains on and how:

    <resume_root>/<key>.json   {"model_uri": ..., "warm_start": ..., ...}

written when training starts and removed when `metadata.json` is written.
A rerun with the same key whose pointer names another model without
`metadata.json` copies that model's newest intact checkpoint into its own
checkpoint directory and continues from it, so at most one checkpoint
interval is lost.

Why a stable folder and not ML Metadata: the pointer lives next to the
pipeline's artifacts (`<pipeline_root>/EmbeddingTrainer/resume`, set by
pipelines/pipeline.py), so it works the same with the local SQLite store and
on Kubeflow (tf.io.gfile, so on GCS), where the executor cannot query the
metadata store; and ML Metadata never records a killed execution's output.
The continued Model gets `interrupted.json` (who resumed it, from which
step) and the local runner marks the killed execution interrupted in ML
Metadata (pipelines/metadata_queries.mark_interrupted).

The key is a SHA-256 of:
  * each Examples artifact's span, version, input fingerprint (the corpus
    files' names, sizes and times) and the names and sizes of its `train`
    files: not its URI, because Kubeflow reruns ExampleGen on every run;
  * the vocabularies' tokens and counts;
  * the module file's SHA-256 (none for skip-gram);
  * the base model's URI (warm start), resolved;
  * every TrainerConfig setting but `tpu`: a checkpoint is the same on CPU
    and TPU, and a preempted TPU often comes back under another address.
Anything else differing gives another key, so a run never continues one with
other inputs or settings.

"Intact": the newest checkpoint (past step 0) whose every tensor reads back
(index, shapes against the spec, data and checksums); damaged ones are
skipped with a warning. A pointer whose owner process is still alive on this
host (a concurrent run of the same inputs) is left alone; on another host
(a Kubeflow pod) the owner is taken to be gone, so two concurrent runs of
the same inputs and settings on Kubeflow may both continue one checkpoint.
"""

import contextlib
import dataclasses
import hashlib
import json
import os
import socket
import time
from typing import Any, Dict, Optional, Sequence, Tuple

import tensorflow as tf
from absl import logging

from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import checkpoints
from tpu_embeddings.training.config import TrainerConfig

# Settings that do not change what is trained (see the module docstring).
DEVICE_SETTINGS = ('tpu',)
# Written into an interrupted Model when a rerun continues it.
INTERRUPTED_FILENAME = 'interrupted.json'


@dataclasses.dataclass(frozen=True)
class Resumed:
  """Where a rerun continues from."""
  model_uri: str   # the interrupted execution's Model
  checkpoint: str  # the checkpoint copied from it
  step: int
  warm_start: Optional[Dict[str, Any]]  # its warm-start report, if any


def _property(artifact, name: str):
  if artifact.has_custom_property(name):
    return artifact.get_custom_property(name)
  if artifact.has_property(name):
    return getattr(artifact, name)
  return None


def examples_identity(artifact, split: str) -> Dict[str, Any]:
  """What an Examples artifact holds, independent of its URI."""
  files = []
  for path in examples_io.split_files(artifact.uri, split):
    files.append([os.path.basename(path), tf.io.gfile.stat(path).length])
  return {name: _property(artifact, name)
          for name in ('span', 'version', 'input_fingerprint')} | {
              'files': files}


def resume_key(examples: Sequence[Any], split: str,
               vocabularies: vocabularies_lib.Vocabularies,
               base_model_uri: str, config: TrainerConfig,
               module_sha256: str = '') -> str:
  """The key of a training: its inputs and settings (module docstring)."""
  settings = {k: v for k, v in json.loads(config.to_json()).items()
              if k not in DEVICE_SETTINGS}
  material = {
      'examples': [examples_identity(a, split) for a in examples],
      'vocabulary': vocabularies_lib.digest(vocabularies),
      'base_model': base_model_uri.rstrip('/'),
      'settings': settings,
  }
  if module_sha256:
    material['module'] = module_sha256
  text = json.dumps(material, sort_keys=True, default=str)
  return hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]


def pointer_path(resume_root: str, key: str) -> str:
  return model_layout.join(resume_root, f'{key}.json')


def kept_dir(resume_root: str, key: str) -> str:
  """Where a failed training's checkpoints are kept (kept.py)."""
  return model_layout.join(resume_root, f'{key}.kept')


def read_pointer(resume_root: str, key: str) -> Optional[Dict[str, Any]]:
  path = pointer_path(resume_root, key)
  if not tf.io.gfile.exists(path):
    return None
  try:
    with tf.io.gfile.GFile(path) as f:
      pointer = json.load(f)
  except (ValueError, tf.errors.OpError) as e:
    logging.warning('Resume pointer %s cannot be read (%s); ignored', path, e)
    return None
  return pointer if isinstance(pointer, dict) else None


def claim(resume_root: str, key: str, model_uri: str,
          warm_start: Optional[Dict[str, Any]]):
  """Points the key at `model_uri` (written to a temporary name, renamed).

  Resuming is a help, not a condition: a pointer that cannot be written is
  a warning (a rerun after a crash then starts from step 0).
  """
  path = pointer_path(resume_root, key)
  temporary = f'{path}.tmp-{os.getpid()}'
  try:
    tf.io.gfile.makedirs(resume_root)
    with tf.io.gfile.GFile(temporary, 'w') as f:
      f.write(json.dumps({
          'model_uri': model_uri, 'warm_start': warm_start,
          'host': socket.gethostname(), 'pid': os.getpid(),
          'started_at': int(time.time())}, indent=2, sort_keys=True) + '\n')
    tf.io.gfile.rename(temporary, path, overwrite=True)
  except (tf.errors.OpError, OSError) as e:
    logging.warning('Resume: cannot write %s (%s); a rerun after a crash '
                    'will train from step 0', path, e)
    with contextlib.suppress(tf.errors.OpError, OSError):
      tf.io.gfile.remove(temporary)


def release(resume_root: str, key: str, model_uri: str):
  """Removes the pointer if it still names `model_uri` (training is done)."""
  pointer = read_pointer(resume_root, key)
  if pointer and pointer.get('model_uri') == model_uri:
    try:
      tf.io.gfile.remove(pointer_path(resume_root, key))
    except tf.errors.OpError as e:  # Harmless: the model is complete.
      logging.warning('Resume: cannot remove %s (%s)',
                      pointer_path(resume_root, key), e)


def _owner_alive(pointer: Dict[str, Any]) -> bool:
  if pointer.get('host') != socket.gethostname():
    return False
  pid = pointer.get('pid')
  if not isinstance(pid, int) or pid == os.getpid():
    return False
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def check_intact(spec: EmbeddingSpec, path: str):
  """Raises CheckpointError unless every tensor of `path` reads back."""
  try:  # The reader raises IndexError for a short file.
    checkpoints.check_embedding_keys(spec, path)
    reader = tf.train.load_checkpoint(path)
    for name in reader.get_variable_to_shape_map():
      reader.get_tensor(name)
  except checkpoint_restore.CheckpointError:
    raise
  except (tf.errors.OpError, ValueError, IndexError, RuntimeError) as e:
    raise checkpoint_restore.CheckpointError(
        f'checkpoint {path} cannot be read ({type(e).__name__}: '
        f'{str(e).splitlines()[0]})') from e


def newest_intact(model_uri: str,
                  spec: EmbeddingSpec) -> Optional[Tuple[int, str]]:
  """The newest checkpoint past step 0 that reads back, or None."""
  for step, path in model_layout.saved_checkpoints(model_uri):
    if step <= 0:
      break
    try:
      check_intact(spec, path)
    except checkpoint_restore.CheckpointError as e:
      logging.warning('Resume: skipping a damaged checkpoint: %s', e)
      continue
    return step, path
  return None


def copy_checkpoint(path: str, model_uri: str) -> str:
  """Copies checkpoint `path` into `model_uri`'s checkpoint directory."""
  directory = model_layout.checkpoint_dir(model_uri)
  tf.io.gfile.makedirs(directory)
  name = os.path.basename(path)
  for source in tf.io.gfile.glob(f'{path}.*'):
    tf.io.gfile.copy(source, model_layout.join(
        directory, os.path.basename(source)), overwrite=True)
  copied = model_layout.join(directory, name)
  # The state file last: a copy cut short is never the latest checkpoint.
  tf.compat.v1.train.update_checkpoint_state(directory, copied)
  return copied


def mark_interrupted(model_uri: str, resumed_by: str, step: int):
  """Notes in the interrupted Model who continued it and from which step.

  Visible wherever the artifacts are (ML Metadata keeps the killed execution
  RUNNING; on Kubeflow nothing else marks it).
  """
  with tf.io.gfile.GFile(model_layout.join(model_uri, INTERRUPTED_FILENAME),
                         'w') as f:
    f.write(json.dumps({'resumed_by': resumed_by, 'resumed_from_step': step,
                        'at': int(time.time())}, sort_keys=True) + '\n')


def adopt(resume_root: str, key: str, model_uri: str,
          spec: EmbeddingSpec) -> Optional[Resumed]:
  """Copies the interrupted run's newest intact checkpoint, if there is one.

  Only for an output without a checkpoint of its own; returns None (and
  logs why) when there is nothing to continue.
  """
  if not resume_root or checkpoints.latest(model_uri) is not None:
    return None
  pointer = read_pointer(resume_root, key) or {}
  previous = str(pointer.get('model_uri') or '')
  if not previous or not tf.io.gfile.exists(previous):
    # A failed run deleted its output, keeping its checkpoints (kept.py).
    previous = kept_dir(resume_root, key)
    pointer = {'warm_start': pointer.get('warm_start')}
  if not previous or previous.rstrip('/') == model_uri.rstrip('/'):
    return None
  if model_layout.read_metadata(previous) is not None:
    logging.info('Resume: %s completed; training from the start', previous)
    return None
  if _owner_alive(pointer):
    logging.warning('Resume: %s is still being trained by process %s; '
                    'training from the start', previous, pointer.get('pid'))
    return None
  found = newest_intact(previous, spec)
  if found is None:
    logging.info('Resume: %s has no intact checkpoint past step 0',
                 previous)
    return None
  step, path = found
  copy_checkpoint(path, model_uri)
  try:
    mark_interrupted(previous, model_uri, step)
  except (tf.errors.OpError, OSError) as e:
    logging.warning('Resume: cannot mark %s interrupted (%s)', previous, e)
  logging.info('Resume: continuing interrupted %s from step %d', previous,
               step)
  return Resumed(previous, path, step, pointer.get('warm_start'))
