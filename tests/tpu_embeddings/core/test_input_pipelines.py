"""One input pipeline's share: two simulated pipelines (hosts) get disjoint
rows that together are the global batches."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.core import input_pipelines


def pipeline(index, pipelines=2, replicas=4):
  return tf.distribute.InputContext(num_input_pipelines=pipelines,
                                    input_pipeline_id=index,
                                    num_replicas_in_sync=replicas)


def global_batches(rows=8, batches=3):
  """Batches of ids numbered 0.. in order, a ragged feature beside them."""
  ids = tf.reshape(tf.range(rows * batches), [batches, rows])
  return tf.data.Dataset.from_tensor_slices(ids).map(lambda x: (
      {'id': x, 'bag': tf.RaggedTensor.from_row_lengths(
          x, tf.ones_like(x, tf.int64))}, {}))


def ids_of(dataset):
  return [ids['id'].numpy().tolist() for ids, _ in dataset]


def test_row_shares_of_two_pipelines_are_disjoint_and_cover_each_batch():
  shares = [ids_of(input_pipelines.row_share(global_batches(), pipeline(i)))
            for i in (0, 1)]
  assert shares[0] == [[0, 1, 2, 3], [8, 9, 10, 11], [16, 17, 18, 19]]
  assert shares[1] == [[4, 5, 6, 7], [12, 13, 14, 15], [20, 21, 22, 23]]


def test_ragged_rows_follow_their_batch_rows():
  (ids, _), = input_pipelines.row_share(global_batches(batches=1),
                                        pipeline(1)).take(1)
  assert ids['bag'].to_list() == [[4], [5], [6], [7]]


def test_rows_of_other_counts_are_cut_evenly_too():
  """Shared negatives: 2 rows for a batch of 8 pairs; each share keeps the
  negatives of its pairs' group."""
  dataset = tf.data.Dataset.from_tensors(
      ({'target': tf.range(8), 'negatives': tf.constant([[100], [101]])}, {}))
  shares = [next(iter(input_pipelines.row_share(dataset, pipeline(i))))[0]
            for i in (0, 1)]
  assert [s['target'].numpy().tolist() for s in shares] == [
      [0, 1, 2, 3], [4, 5, 6, 7]]
  assert [s['negatives'].numpy().tolist() for s in shares] == [[[100]],
                                                               [[101]]]


def test_one_pipeline_is_the_input_unchanged():
  dataset = global_batches()
  assert input_pipelines.row_share(dataset, input_pipelines.single()) is (
      dataset)
  assert input_pipelines.shard(dataset, input_pipelines.single()) is dataset


def test_shards_of_records_are_disjoint_and_cover_them():
  records = tf.data.Dataset.range(11)
  shards = [list(input_pipelines.shard(records, pipeline(i)))
            for i in (0, 1)]
  shards = [[int(x) for x in share] for share in shards]
  assert not set(shards[0]) & set(shards[1])
  assert sorted(shards[0] + shards[1]) == list(range(11))


def test_global_indexes_of_pipelines_interleave():
  got = [[int(input_pipelines.global_index(k, pipeline(i))) for k in range(3)]
         for i in (0, 1)]
  assert got == [[0, 2, 4], [1, 3, 5]]
  np.testing.assert_array_equal(
      input_pipelines.global_index(np.arange(3), input_pipelines.single()),
      np.arange(3))


def test_a_batch_that_does_not_split_over_the_pipelines_is_one_line():
  assert input_pipelines.pipeline_batch_size(8, pipeline(1)) == 4
  with pytest.raises(ValueError, match='batch_size 9 does not split evenly '
                     'over the 2 input pipelines'):
    input_pipelines.pipeline_batch_size(9, pipeline(0))
  with pytest.raises(ValueError, match='batches of 6 rows do not split '
                     'evenly into 4 shares'):
    input_pipelines.split_rows(global_batches(rows=6), 4)
