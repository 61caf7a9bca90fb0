"""Consumers read what a model declares: a SavedModel keyed by integer ids,
one with a two-input signature, one without a `neighbors` signature."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import declared

TABLE = np.array([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0, 0.2, 1]],
                 np.float32)


class _IdModel(tf.Module):
  """Rows of TABLE by integer id, and their cosine neighbours."""

  def __init__(self):
    super().__init__()
    self.table = tf.Variable(TABLE)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
  def embed(self, ids):
    return {'embeddings': tf.gather(self.table, ids)}

  @tf.function(input_signature=[tf.TensorSpec([None], tf.int64),
                                tf.TensorSpec([], tf.int32)])
  def neighbors(self, ids, k):
    unit = tf.math.l2_normalize(self.table, -1)
    scores = tf.matmul(tf.gather(unit, ids), unit, transpose_b=True)
    best = tf.math.top_k(scores, k + 1)
    return {'ids': best.indices[:, 1:], 'scores': best.values[:, 1:]}

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string),
                                tf.TensorSpec([None], tf.string)])
  def pair(self, user, item):
    return {'embedding': tf.stack([tf.strings.length(user),
                                   tf.strings.length(item)], axis=1)}

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def parse(self, examples):
    parsed = tf.io.parse_example(examples, {
        'id': tf.io.FixedLenFeature([], tf.int64, default_value=0)})
    return {'embeddings': tf.gather(self.table, parsed['id'])}


@pytest.fixture(scope='module')
def models(tmp_path_factory):
  base = tmp_path_factory.mktemp('declared')
  module = _IdModel()
  tf.saved_model.save(module, str(base / 'ids'), signatures={
      'serving_default': module.embed, 'neighbors': module.neighbors})
  tf.saved_model.save(module, str(base / 'pair'), signatures={
      'serving_default': module.pair, 'examples': module.parse})
  return {name: tf.saved_model.load(str(base / name))
          for name in ('ids', 'pair')}


def test_integer_ids_are_fed_as_the_signature_declares(models):
  version, vectors = consumer.embed('', ['3', ' 0'], version=7,
                                    loaded=models['ids'])
  assert version == 7
  np.testing.assert_array_equal(vectors, TABLE[[3, 0]])


@pytest.mark.parametrize('value, words', [
    ('cat', "input 'ids' takes integer ids (int64), got 'cat'"),
    ('1.5', "got '1.5'"),
    (str(2**63), 'takes integer ids (int64: '),
])
def test_a_value_of_another_kind_is_one_line_naming_the_input(
    models, value, words):
  with pytest.raises(ValueError, match=r'^signature .serving_default.: ') as e:
    consumer.embed('', [value], version=1, loaded=models['ids'])
  assert words in str(e.value) and '\n' not in str(e.value)


def test_neighbors_of_an_integer_id(models):
  _, found = consumer.neighbors('', '0', k=2, version=1, loaded=models['ids'])
  unit = TABLE / np.linalg.norm(TABLE, axis=1, keepdims=True)
  scores = unit @ unit[0]
  assert [i for i, _ in found] == [1, 2]  # 0 itself left out
  np.testing.assert_allclose([s for _, s in found], scores[[1, 2]],
                             rtol=1e-6)
  with pytest.raises(ValueError, match="input 'ids' takes integer ids"):
    consumer.neighbors('', 'cat', version=1, loaded=models['ids'])


def test_a_model_without_the_signature_names_those_it_declares(models):
  with pytest.raises(ValueError) as e:
    consumer.neighbors('', 'cat', version=1, loaded=models['pair'])
  assert str(e.value) == ("this model declares no 'neighbors' signature "
                          '(it declares: examples, serving_default)')
  with pytest.raises(ValueError, match="declares no 'lookup' signature"):
    consumer.embed('', ['x'], version=1, loaded=models['ids'],
                   signature='lookup')


def test_a_signature_with_several_inputs_takes_them_by_name(models):
  _, vectors = consumer.embed('', {'user': ['ab', 'c'], 'item': ['xyz', '']},
                              version=1, loaded=models['pair'])
  np.testing.assert_array_equal(vectors, [[2, 3], [1, 0]])
  cases = [(['ab'], "takes 2 inputs (item, user): give the values of each "
                    'by name'),
           ({'user': ['a']}, 'takes inputs item, user; missing: item'),
           ({'user': ['a'], 'item': ['b'], 'age': ['3']},
            'it has no input age'),
           ({'user': ['a', 'b'], 'item': ['c']},
            'every input needs a value per row; got 1 of item, 2 of user'),
           ({'user': [], 'item': []}, 'give at least one row'),
           ('ab', 'pass a list of values')]
  for rows, words in cases:
    with pytest.raises(ValueError, match="^signature 'serving_default'") as e:
      consumer.embed('', rows, version=1, loaded=models['pair'])
    assert words in str(e.value), (rows, str(e.value))


def test_a_vocabulary_is_the_inputs_own_or_the_only_one(tmp_path):
  assets = tmp_path / 'assets'
  assets.mkdir()
  (assets / 'tokens.txt').write_text('a\n')
  assert declared.vocabulary_path(str(tmp_path), 'sentences') == str(
      assets / 'tokens.txt')
  (assets / 'user_id.txt').write_text('u1\n')
  assert declared.vocabulary_path(str(tmp_path), 'user_id') == str(
      assets / 'user_id.txt')
  assert declared.vocabulary_path(str(tmp_path), 'history') is None


def test_an_input_the_models_ops_refuse_is_one_line(models):
  example = tf.train.Example(features=tf.train.Features(feature={
      'id': tf.train.Feature(int64_list=tf.train.Int64List(value=[2]))}))
  _, vectors = consumer.embed('', [example.SerializeToString()], version=1,
                              loaded=models['pair'], signature='examples')
  np.testing.assert_array_equal(vectors, TABLE[[2]])
  with pytest.raises(ValueError) as e:
    consumer.embed('', ['hello'], version=1, loaded=models['pair'],
                   signature='examples')
  assert str(e.value) == ("signature 'examples' refused its input: Could not "
                          "parse example input, value: 'hello'")
