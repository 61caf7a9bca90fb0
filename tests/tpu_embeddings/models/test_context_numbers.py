"""`ctx.numbers`: a label or dense input read from a batch of tf.Examples,
int64 or float as the split holds it, also inside the traced input
pipeline where `extras_fn` runs."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.models.context import ModelContext


def _example(rating) -> bytes:
  value = (tf.train.Feature(int64_list=tf.train.Int64List(value=[rating]))
           if isinstance(rating, int) else
           tf.train.Feature(float_list=tf.train.FloatList(value=[rating])))
  return tf.train.Example(features=tf.train.Features(
      feature={'rating': value})).SerializeToString()


def _examples_uri(root, ratings) -> str:
  """An Examples artifact whose train split holds `ratings`."""
  directory = os.path.join(str(root), 'Split-train')
  os.makedirs(directory)
  with tf.io.TFRecordWriter(os.path.join(directory, 'data.gz'),
                            tf.io.TFRecordOptions(
                                compression_type='GZIP')) as w:
    for r in ratings:
      w.write(_example(r))
  return str(root)


@pytest.mark.parametrize('ratings', [[4, 1, 5], [4.0, 1.5, 5.0]])
def test_numbers_in_the_traced_input_are_float32(tmp_path, ratings):
  ctx = ModelContext(examples_uris=(_examples_uri(tmp_path, ratings),))
  batches = tf.data.Dataset.from_tensor_slices(
      [_example(r) for r in ratings]).batch(3).map(
          lambda examples: ctx.numbers(examples, 'rating'))
  [got] = list(batches.as_numpy_iterator())
  assert got.dtype == np.float32
  np.testing.assert_array_equal(got, ratings)


def test_numbers_without_examples_is_one_line():
  with pytest.raises(ValueError,
                     match='ctx.examples_uris is not known without Examples'):
    ModelContext().numbers(tf.constant([_example(4)]), 'rating')
