"""Named vocabularies from stock Examples: each counts its features' tokens."""

import collections
import json
import os

import pytest
import tensorflow as tf

from components import keys
from components.vocabulary.config import VocabularyConfig
from tests.support import vocabulary_runs
from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.artifacts import vocabulary_file

# As CsvExampleGen writes them: an integer column becomes an int64 feature,
# a history cell one bytes value with its items separated by spaces.
ROWS = [{'user_id': 7, 'history': 'i1 i2', 'item_id': 'i3'},
        {'user_id': 8, 'history': 'i3', 'item_id': 'i1'},
        {'user_id': 7, 'history': '', 'item_id': 'i3'}] * 5


def _example(row):
  return tf.train.Example(features=tf.train.Features(feature={
      'user_id': tf.train.Feature(int64_list=tf.train.Int64List(
          value=[row['user_id']])),
      'history': tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[row['history'].encode()])),
      'item_id': tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[row['item_id'].encode()])),
  })).SerializeToString()


def _run(tmp_path, **config):
  return _run_artifact(tmp_path, **config).uri


def _run_artifact(tmp_path, **config):
  train = tmp_path / 'examples' / 'Split-train'
  train.mkdir(parents=True)
  options = tf.io.TFRecordOptions(compression_type='GZIP')
  for part in range(2):
    with tf.io.TFRecordWriter(str(train / f'data-{part}.gz'), options) as w:
      for row in ROWS:
        w.write(_example(row))
  return vocabulary_runs.run(tmp_path, **config)


@pytest.mark.slow
def test_each_vocabulary_counts_its_features_tokens(tmp_path):
  uri = _run(tmp_path, vocabularies={'user_id': ['user_id'],
                                     'item_id': ['history', 'item_id']})
  found = vocabularies.read(uri)
  assert found.names == ('item_id', 'user_id')
  assert found.features == {'item_id': ('history', 'item_id'),
                            'user_id': ('user_id',)}
  items = collections.Counter()
  for row in ROWS * 2:
    items.update(row['history'].split() + [row['item_id']])
  assert found['item_id'] == vocabulary_file.from_counts(items)
  users = collections.Counter(str(row['user_id']) for row in ROWS * 2)
  assert found['user_id'] == vocabulary_file.from_counts(users)
  assert not os.path.exists(os.path.join(uri, 'vocabulary.tsv'))


@pytest.mark.slow
def test_records_with_an_empty_id_are_counted_by_feature(tmp_path):
  """An empty cell looks up no row: counted, for the run summary."""
  artifact = _run_artifact(tmp_path, vocabularies={
      'user_id': ['user_id'], 'item_id': ['history', 'item_id']})
  empty_history = sum(1 for row in ROWS if not row['history'].split()) * 2
  assert empty_history == 10
  assert json.loads(artifact.get_string_custom_property(keys.EMPTY_IDS)) == {
      'history': empty_history, 'item_id': 0, 'user_id': 0}


@pytest.mark.slow
def test_min_count_applies_to_each_vocabulary(tmp_path):
  uri = _run(tmp_path, min_count=25,
             vocabularies={'item_id': ['history', 'item_id']})
  # i3: 10 + 20 = 30, i1: 10 + 10 = 20, i2: 10.
  assert vocabularies.read(uri)['item_id'].tokens == ('i3',)


def test_bad_vocabularies_are_named():
  with pytest.raises(ValueError, match="'items' needs a list of feature"):
    VocabularyConfig(vocabularies={'items': 'item_id'})
  with pytest.raises(ValueError, match='bad name'):
    VocabularyConfig(vocabularies={'a/b': ['x']})


@pytest.mark.slow
def test_a_feature_missing_from_the_examples_is_named(tmp_path):
  with pytest.raises(ValueError, match="feature 'category'"):
    _run(tmp_path, vocabularies={'category': ['category']})
