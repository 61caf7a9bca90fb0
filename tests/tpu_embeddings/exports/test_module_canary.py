"""Tests for tpu_embeddings/exports/module_canary.py: sample tf.Examples of
int64 features (what CsvExampleGen infers for integer ids) survive the
canary's file and the serving check."""

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.exports import module_canary
from tpu_embeddings.exports import warmup
from tpu_embeddings.models import sample_inputs

# Ids of 128 and up take two varint bytes, 0x80 or more: not UTF-8 text.
RAW = {'user_id': np.array(['149 181', '258', ''], dtype=object)}
KINDS = {'user_id': raw_features.INT64}


def _serialized():
  return sample_inputs.serialized_examples(RAW, KINDS)


def test_int64_examples_are_not_utf8_text():
  undecodable = 0
  for record in _serialized():
    try:
      record.decode('utf-8')
    except UnicodeDecodeError:
      undecodable += 1
  assert undecodable  # else the round trip below proves nothing


def test_int64_examples_round_trip_through_the_canary_file(tmp_path):
  serialized = _serialized()
  canary = module_canary.ModelCanary(
      {'examples': {'inputs': {'examples': serialized},
                    'outputs': {'n': np.array([2, 1, 0])}}},
      {'inputs': {'user_id': np.array(['149 181', 'é', ''], dtype=object)},
       'outputs': {'default': np.zeros([3, 2], np.float32)}})
  canary.save(str(tmp_path / 'canary.npz'))
  back = module_canary.ModelCanary.load(str(tmp_path / 'canary.npz'))
  got = back.signatures['examples']['inputs']['examples']
  assert list(got) == list(serialized)
  parsed = tf.io.parse_example(got, raw_features.parse_spec(KINDS))
  assert parsed['user_id'].to_list() == [[149, 181], [258], []]
  assert list(back.hub['inputs']['user_id']) == [
      b'149 181', 'é'.encode('utf-8'), b'']


class _Served(tf.Module):
  """An `examples` signature on int64 ids: the sum of each record's ids."""

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string,
                                              name='examples')])
  def examples(self, examples):
    parsed = tf.io.parse_example(examples, raw_features.parse_spec(KINDS))
    return {'total': tf.reduce_sum(parsed['user_id'], axis=1)}


def test_serving_check_answers_int64_examples(tmp_path):
  export_dir = str(tmp_path / 'serving')
  served = _Served()
  tf.saved_model.save(served, export_dir,
                      signatures={'examples': served.examples})
  serialized = _serialized()
  warmup.write(export_dir, [('examples', {'examples': serialized})])
  canary = module_canary.ModelCanary(
      {'examples': {'inputs': {'examples': serialized},
                    'outputs': {'total': np.array([330, 258, 0])}}},
      {})
  canary.save(str(tmp_path / 'canary.npz'))
  module_canary.check_serving(
      export_dir, module_canary.ModelCanary.load(str(tmp_path / 'canary.npz')))
