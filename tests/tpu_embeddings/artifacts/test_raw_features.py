"""Tests for tpu_embeddings/artifacts/raw_features.py: int64 features (what
CsvExampleGen infers for integer id columns) read as decimal string tokens,
the same tokens a bytes feature of the same ids gives."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.models import context


def _example(**features) -> bytes:
  feature = {}
  for name, values in features.items():
    if all(isinstance(v, int) for v in values):
      feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(
          value=values))
    elif all(isinstance(v, float) for v in values):
      feature[name] = tf.train.Feature(float_list=tf.train.FloatList(
          value=values))
    else:
      feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[v.encode('utf-8') for v in values]))
  return tf.train.Example(features=tf.train.Features(
      feature=feature)).SerializeToString()


def _write(path, records):
  with tf.io.TFRecordWriter(str(path), tf.io.TFRecordOptions(
      compression_type='GZIP')) as w:
    for r in records:
      w.write(r)
  return str(path)


def test_int64_values_become_decimal_string_tokens():
  dense = raw_features.tokens(tf.constant([149, -3, 0], tf.int64))
  assert dense.to_list() == [[b'149'], [b'-3'], [b'0']]
  bags = raw_features.tokens(tf.ragged.constant([[149, 181], [], [7]],
                                                tf.int64))
  assert bags.to_list() == [[b'149', b'181'], [], [b'7']]


def test_int64_and_bytes_examples_give_the_same_tokens():
  ints = tf.constant([_example(user_id=[149, 2**40]), _example(user_id=[])])
  text = tf.constant([_example(user_id=['149', str(2**40)]),
                      _example(user_id=[''])])
  got = raw_features.parse_tokens(ints, {'user_id': raw_features.INT64})
  want = raw_features.parse_tokens(text, {'user_id': raw_features.BYTES})
  assert got['user_id'].to_list() == want['user_id'].to_list() == [
      [b'149', b'1099511627776'], []]


def test_kinds_and_joined_rows_of_int64_files(tmp_path):
  path = _write(tmp_path / 'a.gz', [
      _example(user_id=[149], history=['149 181']),
      _example(user_id=[258], history=['7'])])
  kinds = raw_features.feature_kinds([path], ['user_id', 'history'])
  assert kinds == {'user_id': raw_features.INT64,
                   'history': raw_features.BYTES}
  rows = raw_features.read_joined([path], kinds)
  np.testing.assert_array_equal(rows['user_id'], ['149', '258'])
  np.testing.assert_array_equal(rows['history'], ['149 181', '7'])


def test_float_ids_are_refused_naming_the_feature_and_the_fix(tmp_path):
  path = _write(tmp_path / 'a.gz', [_example(rating=[4.5])])
  with pytest.raises(raw_features.FeatureError,
                     match="feature 'rating' holds floats.*without a decimal "
                     'point, or drop it from FEATURES'):
    raw_features.feature_kinds([path], ['rating'])


def test_files_that_disagree_on_a_kind_are_refused_naming_it(tmp_path):
  ints = _write(tmp_path / 'a.gz', [_example(history=[149])])
  text = _write(tmp_path / 'b.gz', [_example(history=['149 181'])])
  with pytest.raises(raw_features.FeatureError,
                     match="feature 'history' is int64 in .*a.gz but bytes "
                     'in .*b.gz; write the column the same way'):
    raw_features.feature_kinds([ints, text], ['history'])


def test_an_eval_split_is_read_with_its_own_kinds(tmp_path):
  """CsvExampleGen infers each split's column types apart: a history of one
  item everywhere in eval is int64 there, bytes in train."""
  for split, history in (('train', ['149 181']), ('eval', [181])):
    (tmp_path / f'Split-{split}').mkdir()
    _write(tmp_path / f'Split-{split}' / 'a.gz',
           [_example(user_id=[149], history=history)])
  features = {'user_id': 'user_id', 'history': 'item_id'}
  ctx = context.ModelContext(
      features=features, examples_uris=(str(tmp_path),),
      feature_kinds=raw_features.feature_kinds(
          raw_features.split_files([str(tmp_path)], 'train'), features))
  rows = ctx.read_split('eval')
  np.testing.assert_array_equal(rows['history'], ['181'])
  np.testing.assert_array_equal(rows['user_id'], ['149'])


@pytest.mark.parametrize('value, kind', [(4, raw_features.INT64),
                                         (4.5, raw_features.FLOAT)])
def test_a_number_feature_is_read_as_the_examples_hold_it(tmp_path, value,
                                                           kind):
  path = _write(tmp_path / 'a.gz', [_example(rating=[value]),
                                    _example(rating=[value * 2])])
  assert raw_features.number_kind([path], 'rating') == kind
  got = raw_features.parse_numbers(
      tf.constant([_example(rating=[value]), _example(rating=[value * 2])]),
      'rating', kind)
  assert got.dtype == tf.float32
  np.testing.assert_array_equal(got.numpy(), [value, value * 2])


def test_a_number_feature_of_strings_or_two_kinds_is_refused(tmp_path):
  text = _write(tmp_path / 'a.gz', [_example(rating=['good'])])
  with pytest.raises(raw_features.FeatureError,
                     match="feature 'rating' holds strings, not numbers"):
    raw_features.number_kind([text], 'rating')
  ints = _write(tmp_path / 'b.gz', [_example(rating=[4])])
  floats = _write(tmp_path / 'c.gz', [_example(rating=[4.5])])
  with pytest.raises(raw_features.FeatureError,
                     match="'rating' is int64 in .*b.gz but float in"):
    raw_features.number_kind([ints, floats], 'rating')


_VOCABULARY = ['a', 'b', 'c', '7', 'é']


def _expected_rows(bags):
  """Each bag's known tokens' rows, by Python's tokenizer and a dict."""
  from tpu_embeddings.core import text
  row = {t: i for i, t in enumerate(_VOCABULARY)}
  return [[row[t] for t in text.tokenize(str(bag)) if t in row]
          for bag in bags]


@pytest.mark.parametrize('traced', [False, True])
def test_raw_bags_become_the_rows_of_their_known_tokens(traced):
  """Dense strings, integers and ragged bags: whitespace runs split, unknown
  tokens dropped, an all-unknown or empty bag left empty, in row order."""
  bags = ['a  b\tz', '', 'zz yy', 'é c a', ' 7 ', 'b']
  lookup = context.static_lookup(_VOCABULARY)
  to_ids = lambda raw: context.ids_of(raw_features.tokens(raw), lookup)
  if traced:
    to_ids = tf.function(to_ids, autograph=False)
  dense = to_ids(tf.constant(bags))
  assert dense.dtype == tf.int32
  assert dense.to_list() == _expected_rows(bags)
  ints = to_ids(tf.constant([7, 3, 7], tf.int64))
  assert ints.to_list() == [[3], [], [3]]
  ragged = to_ids(tf.ragged.constant([['a b', 'q'], [], ['7', 'c', 'c']]))
  assert ragged.to_list() == [[0, 1], [], [3, 2, 2]]
  assert to_ids(tf.constant([], tf.string)).to_list() == []


def test_bags_of_bags_are_one_bag_per_row():
  nested = tf.ragged.constant([[['a b'], ['c']], [], [['7', '']]])
  assert raw_features.tokens(nested).to_list() == [
      [b'a', b'b', b'c'], [], [b'7']]
