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


def _examples_uri(root, ratings, split='train') -> str:
  """An Examples artifact whose `split` holds `ratings`."""
  directory = os.path.join(str(root), f'Split-{split}')
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


@pytest.mark.parametrize('limit, ratings', [(0, [4, 1, 5, 2]),
                                            (3, [4.5, 1.0, 5.0, 2.0])])
def test_eval_numbers_are_the_first_eval_records_in_order(tmp_path, limit,
                                                          ratings):
  """What `eval_fn` compares its predictions with: the label of each record
  `ctx.eval_examples` gives, the first `max_eval_examples` of them."""
  ctx = ModelContext(examples_uris=(_examples_uri(tmp_path, ratings,
                                                  'eval'),),
                     max_eval_examples=limit)
  got = ctx.eval_numbers('rating')
  assert got.dtype == np.float32
  np.testing.assert_array_equal(got, ratings[:limit or None])
