"""The trainer's checkpoint: the embedding, the dense model beside it (when
the module has one), its optimizer and the step counters.

    tf.train.Checkpoint(embedding=<TPUEmbedding | TPUEmbeddingForServing>,
                        model=<tf.keras.Model>, dense_optimizer=<Keras
                        optimizer>, step=int64, examples_seen=int64,
                        loss=float32)

saved by a `tf.train.CheckpointManager` in `model_layout.checkpoint_dir`.
The embedding keys are those the TPU writes (model_layout.table_key /
slot_key), whichever adapter saved it; the embedding is never inside the
model, so its keys do not depend on the model's code.
"""

import dataclasses
from typing import Any, Dict, Optional

import tensorflow as tf

from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

MAX_TO_KEEP = 3


@dataclasses.dataclass
class TrainingCheckpoint:
  checkpoint: tf.train.Checkpoint
  manager: tf.train.CheckpointManager
  step: tf.Variable
  examples_seen: tf.Variable
  loss: tf.Variable


def objects(embedding, model=None, dense_optimizer=None) -> Dict[str, Any]:
  """What a checkpoint of the trainer holds besides its counters."""
  found = {model_layout.EMBEDDING_KEY: embedding}
  if model is not None:
    found[model_layout.MODEL_KEY] = model
    found[model_layout.DENSE_OPTIMIZER_KEY] = dense_optimizer
  return found


def create(embedding, model_uri: str, model=None,
           dense_optimizer=None) -> TrainingCheckpoint:
  step = tf.Variable(0, dtype=tf.int64, name='step')
  examples_seen = tf.Variable(0, dtype=tf.int64, name='examples_seen')
  loss = tf.Variable(float('nan'), dtype=tf.float32, name='loss')
  checkpoint = tf.train.Checkpoint(
      **objects(embedding, model, dense_optimizer), step=step,
      examples_seen=examples_seen, loss=loss)
  manager = tf.train.CheckpointManager(
      checkpoint, model_layout.checkpoint_dir(model_uri),
      max_to_keep=MAX_TO_KEEP, step_counter=step)
  return TrainingCheckpoint(checkpoint, manager, step, examples_seen, loss)


def check_embedding_keys(spec: EmbeddingSpec, path: str):
  """Tables and the optimizer's slots are in the checkpoint with spec shapes.

  Raises CheckpointError naming the missing or mis-shaped key.
  """
  checkpoint_restore.check_tables(spec, path)
  shapes = checkpoint_restore.checkpoint_shapes(path)
  for table in spec.tables:
    want = [table.vocabulary_size, table.dim]
    for slot in spec.optimizer.slot_names:
      key = model_layout.slot_key(table.name, slot)
      if key not in shapes:
        raise checkpoint_restore.CheckpointError(
            f'checkpoint {path}: optimizer slot {slot!r} of table '
            f'{table.name!r} is missing (a {spec.optimizer.kind} checkpoint '
            f'needs {list(spec.optimizer.slot_names)}); was it saved with '
            'another optimizer or without slots?')
      if list(shapes[key]) != want:
        raise checkpoint_restore.CheckpointError(
            f'checkpoint {path}: slot {slot!r} of table {table.name!r} has '
            f'shape {list(shapes[key])} but the spec says {want}')


def restore(training_checkpoint: TrainingCheckpoint, spec: EmbeddingSpec,
            path: str, model=None, dense_optimizer=None):
  """Restores the embedding (tables + slots), whatever counters `path` has
  and, given them built, the dense model and its optimizer.

  Raises CheckpointError when a dense variable is not in `path`.
  """
  check_embedding_keys(spec, path)
  status = training_checkpoint.checkpoint.restore(path)
  status.expect_partial()  # A TPU-format checkpoint may lack our counters.
  if model is not None:
    restore_dense(path, model, dense_optimizer)
  return status


def restore_dense(path: str, model, dense_optimizer):
  """Restores the built model and optimizer from `path`, every variable of
  them found there (else CheckpointError)."""
  dense = {model_layout.MODEL_KEY: model,
           model_layout.DENSE_OPTIMIZER_KEY: dense_optimizer}
  try:
    tf.train.Checkpoint(**dense).restore(
        path).assert_existing_objects_matched().expect_partial()
  except AssertionError as e:
    raise checkpoint_restore.CheckpointError(
        f'checkpoint {path} does not hold every variable of the dense model '
        f'and its optimizer ({str(e).splitlines()[0][:300]}); was it saved '
        'by another module file?') from e


def latest(model_uri: str) -> Optional[str]:
  return tf.train.latest_checkpoint(model_layout.checkpoint_dir(model_uri))
