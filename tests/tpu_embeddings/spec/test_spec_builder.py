"""The spec helper builds the common cases a module file needs, and each
spec it builds is one the pipeline resolves against its vocabularies."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.artifacts.vocabulary_file import TokenCounts
from tpu_embeddings.models import spec_vocabularies
from tpu_embeddings.spec import spec_builder
from tpu_embeddings.spec.checks import SpecError


def _tables(spec):
  return {t.name: (t.dim, t.vocabulary, t.vocabulary_size)
          for t in spec.tables}


def _features(spec):
  return {f.name: f.table for f in spec.features}


def test_one_table_per_id_feature():
  spec = spec_builder.id_tables({'user_id': 'users', 'item_id': 'items'},
                                dim=16)
  assert _tables(spec) == {'users': (16, 'users', 0),
                           'items': (16, 'items', 0)}
  assert _features(spec) == {'user_id': 'users', 'item_id': 'items'}
  assert spec.optimizer.hyperparameters['initial_accumulator_value'] == 1e-3


def test_features_of_one_vocabulary_share_its_table():
  spec = spec_builder.id_tables(
      {'user_id': 'user', 'history': 'item', 'item_id': 'item'},
      dim={'user': 8, 'item': 32})
  assert _tables(spec) == {'user': (8, 'user', 0), 'item': (32, 'item', 0)}
  assert _features(spec) == {'user_id': 'user', 'history': 'item',
                             'item_id': 'item'}


def test_tables_gives_a_feature_its_own_table_over_a_shared_vocabulary():
  spec = spec_builder.id_tables({'history': 'item', 'item_id': 'item'},
                                dim=8, tables={'history': 'history_items'})
  assert _tables(spec) == {'item': (8, 'item', 0),
                           'history_items': (8, 'item', 0)}
  assert _features(spec) == {'history': 'history_items', 'item_id': 'item'}


def test_a_biased_table_is_one_column_wider():
  spec = spec_builder.id_tables({'user_id': 'user', 'item_id': 'item'},
                                dim=4, biased=('item',))
  assert _tables(spec) == {'user': (4, 'user', 0), 'item': (5, 'item', 0)}


def test_split_bias_takes_the_last_column():
  activation = tf.constant([[1., 2., 3.], [4., 5., 6.]])
  vector, bias = spec_builder.split_bias(activation)
  np.testing.assert_array_equal(vector.numpy(), [[1., 2.], [4., 5.]])
  np.testing.assert_array_equal(bias.numpy(), [3., 6.])


def test_the_pipeline_sizes_the_built_tables_from_their_vocabularies():
  features = {'user_id': 'user', 'history': 'item', 'item_id': 'item'}
  spec = spec_builder.id_tables(features, dim=4, biased=('user',))
  vocabs = vocabularies.Vocabularies(
      by_name={'user': TokenCounts(('u1', 'u2'), (3, 1)),
               'item': TokenCounts(('i1', 'i2', 'i3'), (2, 2, 1))},
      features={'user': ('user_id',), 'item': ('history', 'item_id')})
  resolved = spec_vocabularies.resolve(spec, features, vocabs)
  assert _tables(resolved) == {'user': (5, 'user', 2),
                               'item': (4, 'item', 3)}
  configs = resolved.build_feature_config()
  assert configs['history'].table is configs['item_id'].table


@pytest.mark.parametrize('kwargs, words', [
    ({'features': {}}, 'FEATURES is empty'),
    ({'biased': ('users',)}, "biased: 'users' is not a table; tables are "
     "['item', 'user']"),
    ({'tables': {'history': 'item'}}, "tables: ['history'] are not in "
     'FEATURES'),
    ({'tables': {'user_id': 'item'}}, 'tables.item: its features come from '
     "vocabularies ['item', 'user']"),
    ({'dim': {'user': 4}}, "tables.item.dim: no width given; dim names "
     "['user']"),
    ({'dim': 'wide'}, "tables.item.dim: must be an integer, got 'wide'"),
    ({'dim': 0}, 'tables.item.dim'),
])
def test_bad_input_is_one_line_naming_the_field(kwargs, words):
  args = {'features': {'user_id': 'user', 'item_id': 'item'}, 'dim': 4,
          **kwargs}
  with pytest.raises(SpecError) as raised:
    spec_builder.id_tables(**args)
  message = str(raised.value)
  assert words in message and '\n' not in message, message
