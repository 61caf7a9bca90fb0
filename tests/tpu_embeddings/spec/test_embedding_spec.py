import json

import pytest
import tensorflow as tf

from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.models.skipgram_features import skipgram_tables
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.spec.embedding_spec import FeatureSpec
from tpu_embeddings.spec.embedding_spec import OptimizerSpec
from tpu_embeddings.spec.embedding_spec import SpecError
from tpu_embeddings.spec.embedding_spec import TableSpec


@pytest.mark.parametrize('optimizer,params', [
    ('sgd', {'learning_rate': 0.5}),
    ('adagrad', {'learning_rate': 0.2, 'initial_accumulator_value': 0.3}),
    ('adam', {'beta_1': 0.8, 'lazy_adam': False}),
    ('ftrl', {'l1_regularization_strength': 0.01, 'beta': 0.1,
              'multiply_linear_by_learning_rate': True}),
])
def test_json_round_trip_is_exact(tmp_path, optimizer, params):
  spec = skipgram_spec(dim=16, optimizer=optimizer, vocabulary_size=100,
                       **params)
  assert EmbeddingSpec.from_json(spec.to_json()) == spec
  spec.save(str(tmp_path))
  loaded = EmbeddingSpec.load(str(tmp_path))
  assert loaded == spec and loaded.to_json() == spec.to_json()
  for key, value in params.items():
    assert loaded.optimizer.hyperparameters[key] == value


def test_builds_fresh_config_objects_every_call():
  spec = skipgram_spec(dim=4, vocabulary_size=10, optimizer='adam')
  a, b = spec.build_feature_config(), spec.build_feature_config()
  assert a['target'].table is a['context'].table  # one table, shared
  assert a['target'].table is not b['target'].table
  assert spec.build_optimizer() is not spec.build_optimizer()
  # The mid-level API accepts and mutates them; the spec is unaffected.
  emb = tf.tpu.experimental.embedding.TPUEmbedding(a, spec.build_optimizer())
  emb.build()
  assert a['target'].table.optimizer is not None
  assert spec.build_feature_config()['target'].table.optimizer is None
  table = list(emb.embedding_tables.values())[0]
  assert table.shape == (10, 4)


def test_optimizer_objects_carry_the_hyperparameters():
  opt = skipgram_spec(optimizer='ftrl', learning_rate=0.3,
                      beta=0.2).build_optimizer()
  assert isinstance(opt, tf.tpu.experimental.embedding.FTRL)
  assert opt.learning_rate == 0.3 and opt.beta == 0.2


def _bad(mutate):
  d = skipgram_spec(dim=4, vocabulary_size=10).to_dict()
  mutate(d)
  return json.dumps(d)


@pytest.mark.parametrize('mutate,field', [
    (lambda d: d['tables'][0].update(dim=0), 'tables[0].dim'),
    (lambda d: d['tables'][0].update(dim=-3), 'tables[0].dim'),
    (lambda d: d['tables'][0].update(vocabulary_size=-1),
     'tables[0].vocabulary_size'),
    (lambda d: d['tables'][0].update(combiner='max'), 'tables[0].combiner'),
    (lambda d: d['tables'][0].update(initializer='ones'),
     'tables[0].initializer'),
    (lambda d: d['optimizer'].update(kind='rmsprop'), 'optimizer.kind'),
    (lambda d: d['optimizer'].update(momentum=0.9), 'optimizer.momentum'),
    (lambda d: d['optimizer'].update(learning_rate=0),
     'optimizer.learning_rate'),
    (lambda d: d['optimizer'].update(learning_rate='fast'),
     'optimizer.learning_rate'),
    (lambda d: d['features'][1].update(table='nope'), 'features[1].table'),
    (lambda d: d['features'][2].update(name='target'), 'features[2].name'),
    (lambda d: d['tables'].append(dict(d['tables'][0])), 'tables[1].name'),
    (lambda d: d['tables'][0].update(colour=1), 'tables[0].colour'),
    (lambda d: d.update(tables=[]), 'tables'),
    # Beyond any real table or optimizer (the bounds' own tests below).
    (lambda d: d['tables'][0].update(dim=100_000), 'tables[0].dim'),
    (lambda d: d['tables'][0].update(vocabulary_size=10**12),
     'tables[0].vocabulary_size'),
    (lambda d: d['tables'][0].update(initializer_scale=1e6),
     'tables[0].initializer_scale'),
    (lambda d: d['features'][0].update(max_sequence_length=10**9),
     'features[0].max_sequence_length'),
    (lambda d: d['optimizer'].update(learning_rate=1e9),
     'optimizer.learning_rate'),
    (lambda d: d['optimizer'].update(initial_accumulator_value=1e9),
     'optimizer.initial_accumulator_value'),
])
def test_bad_values_name_the_field(mutate, field):
  with pytest.raises(SpecError) as e:
    EmbeddingSpec.from_json(_bad(mutate))
  assert f': {field}:' in str(e.value)
  assert '\n' not in str(e.value)


def test_bounds_take_real_tpu_tables_and_name_the_limit():
  """Billions of rows and thousands of dimensions are real; a million
  dimensions is not."""
  spec = skipgram_spec(dim=4096, vocabulary_size=3_000_000_000)
  assert spec.with_table('tokens', dim=8192).tables[0].dim == 8192
  with pytest.raises(SpecError) as e:
    spec.with_table('tokens', dim=1_000_000)
  assert str(e.value) == ('embedding spec: tables[0].dim: must be an integer '
                          '>= 1 and <= 8192, got 1,000,000')
  adam = EmbeddingSpec.from_json(_bad(lambda d: d.update(optimizer={
      'kind': 'adam', 'beta_2': 0.9999, 'epsilon': 1e-8})))
  assert adam.optimizer.hyperparameters['beta_2'] == 0.9999
  with pytest.raises(SpecError, match=r'optimizer.beta_2: must be a number '
                     r'>= 0 and <= 0.999999, got 1$'):
    EmbeddingSpec.from_json(_bad(lambda d: d.update(optimizer={
        'kind': 'adam', 'beta_2': 1.0})))


def test_vocabulary_size_must_be_set_before_building():
  spec = skipgram_spec(dim=4)
  with pytest.raises(SpecError, match='tables\\[0\\].vocabulary_size'):
    spec.build_feature_config()
  assert spec.with_vocabulary_size('tokens', 7).tables[0].vocabulary_size == 7


def test_not_json_is_a_clear_error():
  with pytest.raises(SpecError, match='not valid JSON'):
    EmbeddingSpec.from_json('{tables:')


def test_constructor_validates():
  with pytest.raises(SpecError, match='features\\[0\\].table'):
    EmbeddingSpec(tables=(TableSpec('a', dim=2),),
                  features=(FeatureSpec('f', 'b'),), optimizer=OptimizerSpec())


def test_context_table_is_a_second_zero_table_read_by_context_and_negatives():
  spec = skipgram_spec(dim=4, vocabulary_size=10, context_table=True)
  assert [t.name for t in spec.tables] == ['tokens', 'contexts']
  assert spec.table('contexts').initializer == 'zeros'
  assert skipgram_tables(spec) == ('tokens', 'contexts')
  assert skipgram_tables(skipgram_spec(dim=4)) == ('tokens', 'tokens')
  assert EmbeddingSpec.from_json(spec.to_json()) == spec
  config = spec.build_feature_config()
  assert config['context'].table is config['negatives'].table
  assert config['target'].table is not config['context'].table
  only = spec.only_tables(['tokens'])
  assert [t.name for t in only.tables] == ['tokens']
  assert [f.name for f in only.features] == ['target']
  with pytest.raises(KeyError, match='no table'):
    spec.only_tables(['nope'])


@pytest.mark.parametrize('features,tables,message', [
    ((('target', 'tokens'), ('context', 'tokens')), ('tokens',),
     'exactly the features'),
    ((('target', 'tokens'), ('context', 'contexts'), ('negatives', 'tokens')),
     ('tokens', 'contexts'), "must read the context feature's table"),
    ((('target', 'tokens'), ('context', 'tokens'), ('negatives', 'tokens')),
     ('tokens', 'contexts'), "table\\(s\\) \\['contexts'\\] are read by no"),
    ((('target', 'tokens'), ('context', 'contexts'),
      ('negatives', 'contexts')), ('tokens', 'contexts:8'), 'same dim'),
])
def test_skipgram_tables_names_what_is_wrong(features, tables, message):
  table_specs = []
  for t in tables:
    name, _, dim = t.partition(':')
    table_specs.append(TableSpec(name, int(dim or 4), 10))
  spec = EmbeddingSpec(tuple(table_specs),
                       tuple(FeatureSpec(n, t) for n, t in features))
  with pytest.raises(SpecError, match=message):
    skipgram_tables(spec)
