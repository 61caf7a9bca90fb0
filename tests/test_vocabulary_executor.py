"""Vocabulary executor on real Examples files with a real Beam pipeline."""

import collections
import os
import random

import pytest
import tensorflow as tf
from tfx.types import standard_artifacts

from components import examples_io
from components import vocabulary_file
from components.artifact_types import Vocabulary as VocabularyArtifact
from components.vocabulary import executor
from components.vocabulary.config import VocabularyConfig


def _write(path, sequences):
  options = tf.io.TFRecordOptions(compression_type='GZIP')
  with tf.io.TFRecordWriter(str(path), options) as w:
    for seq in sequences:
      w.write(examples_io.make_example(seq).SerializeToString())


def _run(tmp_path, **config):
  examples = standard_artifacts.Examples()
  examples.uri = str(tmp_path / 'examples')
  examples.set_int_custom_property('span', 4)
  vocab = VocabularyArtifact()
  vocab.uri = str(tmp_path / 'vocabulary')
  os.makedirs(vocab.uri, exist_ok=True)
  executor.Executor().Do(
      {executor.EXAMPLES_KEY: [examples]}, {executor.VOCABULARY_KEY: [vocab]},
      {'config': VocabularyConfig(**config).to_json()})
  return vocabulary_file.read(vocab.uri), vocab


def test_counts_every_train_file_like_a_counter(tmp_path, monkeypatch):
  monkeypatch.setattr(executor, '_RECORDS_PER_BATCH', 7)
  monkeypatch.setattr(executor, '_PARTIALS', 3)
  rng = random.Random(0)
  train = tmp_path / 'examples' / 'Split-train'
  train.mkdir(parents=True)
  counts = collections.Counter()
  for i in range(3):
    sequences = [[f'w{rng.randint(0, 40)}' for _ in range(rng.randint(1, 9))]
                 + ['café'] for _ in range(100)]
    counts.update(t for s in sequences for t in s)
    _write(train / f'data_tfrecord-{i:05d}-of-00004.gz', sequences)
  _write(train / 'data_tfrecord-00003-of-00004.gz', [])
  eval_dir = tmp_path / 'examples' / 'Split-eval'
  eval_dir.mkdir()
  _write(eval_dir / 'data_tfrecord-00000-of-00001.gz', [['only-in-eval']])
  vocab, artifact = _run(tmp_path)
  assert dict(zip(vocab.tokens, vocab.counts)) == dict(counts)
  assert vocab == vocabulary_file.from_counts(counts)
  assert artifact.get_int_custom_property('span') == 4


def test_min_count_and_max_tokens(tmp_path):
  train = tmp_path / 'examples' / 'Split-train'
  train.mkdir(parents=True)
  _write(train / 'data_tfrecord-00000-of-00001.gz',
         [['a', 'b', 'a', 'c'], ['a', 'b', 'd']])
  vocab, _ = _run(tmp_path, min_count=2)
  assert vocab.tokens == ('a', 'b') and vocab.counts == (3, 2)
  vocab, _ = _run(tmp_path, max_tokens=3)
  assert vocab.tokens == ('a', 'b', 'c')
  with pytest.raises(ValueError, match='no token reaches min_count=9'):
    _run(tmp_path, min_count=9)
