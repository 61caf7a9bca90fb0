"""Builds small real artifacts on disk for component tests."""

import os
from typing import Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


def write_examples(uri: str, splits: Dict[str, Sequence[List[str]]]) -> str:
  """Examples artifact in TFX's layout: Split-<name>/data_tfrecord-00000.gz."""
  for split, sequences in splits.items():
    d = os.path.join(uri, f'Split-{split}')
    os.makedirs(d, exist_ok=True)
    opts = tf.io.TFRecordOptions(compression_type='GZIP')
    with tf.io.TFRecordWriter(
        os.path.join(d, 'data_tfrecord-00000-of-00001.gz'), opts) as w:
      for seq in sequences:
        w.write(examples_io.make_example(list(seq)).SerializeToString())
  return uri


def write_vocabulary(uri: str,
                     counts: Dict[str, int]) -> vocabulary_file.TokenCounts:
  vocab = vocabulary_file.from_counts(counts)
  vocabulary_file.write(uri, vocab)
  return vocab


def write_tpu_format_model(uri: str,
                           tokens: Sequence[str],
                           spec: Optional[EmbeddingSpec] = None,
                           table: Optional[np.ndarray] = None,
                           seed: int = 0,
                           tables: Optional[Dict[str, np.ndarray]] = None,
                           counts: Sequence[int] = ()
                           ) -> EmbeddingSpec:
  """A Model artifact whose checkpoint is saved by `TPUEmbedding` in CPU mode.

  `TPUEmbedding` built outside any TPU strategy writes the same keys as on a
  TPU (tables and optimizer slots); `table` overrides the first table's
  values, `tables` those of the tables it names. Every table has a row per
  token. `counts`: the vocabulary's counts, as the trainer copies them from
  the Vocabulary artifact (default: descending from len(tokens)).
  """
  spec = spec or skipgram_spec(dim=8)
  for t in spec.tables:
    spec = spec.with_vocabulary_size(t.name, len(tokens))
  os.makedirs(uri, exist_ok=True)
  spec.save(uri)
  vocabulary_file.write(uri, vocabulary_file.TokenCounts(
      tuple(tokens), tuple(counts) or tuple(range(len(tokens), 0, -1))))
  tf.random.set_seed(seed)
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  if table is not None:
    list(embedding.embedding_tables.values())[0].assign(table)
  for config, variable in embedding.embedding_tables.items():
    if tables and config.name in tables:
      variable.assign(tables[config.name])
  ckpt = tf.train.Checkpoint(
      **{model_layout.EMBEDDING_KEY: embedding},
      step=tf.Variable(0, dtype=tf.int64))
  tf.train.CheckpointManager(ckpt, model_layout.checkpoint_dir(uri),
                             max_to_keep=3).save()
  model_layout.write_metadata(uri, {'steps': 0, 'spans': [1],
                                    'device': 'cpu-mode TPUEmbedding'})
  return spec


class SpanlessExamples:
  """Stands in for an Examples artifact without a span."""

  def __init__(self, uri):
    self.uri = uri

  def has_custom_property(self, name):
    del name
    return False

  def has_property(self, name):
    del name
    return False
