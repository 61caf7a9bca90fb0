"""The TensorBoard projector files of a training run: each projected table's
most frequent tokens.

    <run>/train/projector_config.pbtxt   one entry per projected table
    <run>/train/metadata.tsv             token<TAB>count of the first (or
                                         only) table's rows; further tables'
                                         in metadata-<table>.tsv
    <run>/train/checkpoint, projector-*  a checkpoint of just those rows

Vocabularies are ordered by count, so a table's first rows are its most
frequent tokens.
"""

from typing import Callable, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging
from tensorboard.plugins import projector

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file

METADATA_FILENAME = 'metadata.tsv'
PROJECTOR_CHECKPOINT = 'projector'

# (table name, its vocabulary)
Projected = Tuple[str, vocabulary_file.TokenCounts]


def metadata_filename(position: int, table: str) -> str:
  return METADATA_FILENAME if position == 0 else f'metadata-{table}.tsv'


def write(directory: str, tables: Sequence[Projected], max_rows: int,
          read_rows: Callable[[str, np.ndarray], np.ndarray]):
  """The first `max_rows` rows of each table (`read_rows(table, ids)`) as a
  checkpoint, their labels, and the projector config last."""
  rows = {table: np.asarray(read_rows(table, np.arange(
      min(max_rows, len(vocabulary))))) for table, vocabulary in tables}
  with tf.device('/cpu:0'):
    checkpoint = tf.train.Checkpoint(
        **{table: tf.Variable(values) for table, values in rows.items()})
  tf.train.CheckpointManager(checkpoint, directory, max_to_keep=1,
                             checkpoint_name=PROJECTOR_CHECKPOINT).save()
  config = projector.ProjectorConfig()
  for position, (table, vocabulary) in enumerate(tables):
    n = rows[table].shape[0]
    name = metadata_filename(position, table)
    with tf.io.gfile.GFile(model_layout.join(directory, name), 'w') as f:
      f.write('token\tcount\n')
      for token, count in zip(vocabulary.tokens[:n], vocabulary.counts[:n]):
        f.write(f'{token}\t{count}\n')
    entry = config.embeddings.add()
    entry.tensor_name = f'{table}/.ATTRIBUTES/VARIABLE_VALUE'
    entry.metadata_path = name
    logging.info('TensorBoard projector: %d most frequent tokens of %d of '
                 'table %s in %s', n, len(vocabulary), table, directory)
  projector.visualize_embeddings(directory, config)
