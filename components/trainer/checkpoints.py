"""The trainer's checkpoint: the embedding object plus step counters.

    tf.train.Checkpoint(embedding=<TPUEmbedding | TPUEmbeddingForServing>,
                        step=int64, examples_seen=int64, loss=float32)

saved by a `tf.train.CheckpointManager` in `model_layout.checkpoint_dir`.
The embedding keys are those the TPU writes (model_layout.table_key /
slot_key), whichever adapter saved it.
"""

import dataclasses
from typing import Optional

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


def create(embedding, model_uri: str) -> TrainingCheckpoint:
  step = tf.Variable(0, dtype=tf.int64, name='step')
  examples_seen = tf.Variable(0, dtype=tf.int64, name='examples_seen')
  loss = tf.Variable(float('nan'), dtype=tf.float32, name='loss')
  checkpoint = tf.train.Checkpoint(
      **{model_layout.EMBEDDING_KEY: embedding}, step=step,
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
            path: str):
  """Restores embedding (tables + slots) and whatever counters `path` has."""
  check_embedding_keys(spec, path)
  status = training_checkpoint.checkpoint.restore(path)
  status.expect_partial()  # A TPU-format checkpoint may lack our counters.
  return status


def latest(model_uri: str) -> Optional[str]:
  return tf.train.latest_checkpoint(model_layout.checkpoint_dir(model_uri))
