"""The TPU adapter's input with shared negatives, as far as a CPU allows:
each replica's share of a batch, and the activations TPUEmbedding would give.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.support import paths
from tests.support import tpu_shapes
from tpu_embeddings.core import input_pipelines
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training import cpu_adapter
from tpu_embeddings.training import tpu_adapter

B, GROUPS, S, D = 8, 4, 3, 4


def shared_batch():
  """A batch of B pairs numbered 0..B-1 and GROUPS rows of S negatives,
  every id distinct."""
  return ({'target': tf.range(B), 'context': tf.range(B) + 50,
           'negatives': tf.reshape(tf.range(GROUPS * S), [GROUPS, S]) + 100},
          {})


def test_each_replica_gets_its_pairs_and_their_groups_negatives():
  dataset = tf.data.Dataset.from_tensors(shared_batch())
  context = tf.distribute.InputContext(num_input_pipelines=2,
                                       input_pipeline_id=1,
                                       num_replicas_in_sync=4)
  # An input_fn that builds whole global batches: each pipeline keeps its
  # rows of every batch.
  per_pipeline = tpu_adapter.replica_batches(
      lambda c: input_pipelines.row_share(dataset, c), 4)
  shares = list(per_pipeline(context))
  ids, _ = shared_batch()
  # Input pipeline 1 of 2 feeds replicas 2 and 3: pairs 4-5 and 6-7, and the
  # negatives of their groups (groups of two pairs: rows 2 and 3).
  assert [s[0]['target'].numpy().tolist() for s in shares] == [[4, 5], [6, 7]]
  for replica, (share, _) in zip((2, 3), shares):
    np.testing.assert_array_equal(share['negatives'],
                                  ids['negatives'][replica:replica + 1])


MIRRORED = '''
import json, sys
import tensorflow as tf
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices('CPU')[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
from tpu_embeddings.training import tpu_adapter
from tests.tpu_embeddings.training.test_tpu_adapter import shared_batch
strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
dataset = tf.data.Dataset.from_tensors(shared_batch()).repeat(2)
ids, _ = next(iter(tpu_adapter.distribute(strategy, lambda _: dataset)))
print(json.dumps({name: [v.numpy().tolist()
                         for v in strategy.experimental_local_results(t)]
                  for name, t in ids.items()}))
'''


def test_a_strategy_with_two_replicas_splits_pairs_and_negatives_alike():
  """tf.distribute's own per-replica path (two logical CPUs in a process of
  their own: logical devices are fixed at TensorFlow's start)."""
  run = subprocess.run([sys.executable, '-c', MIRRORED], cwd=paths.REPO,
                       capture_output=True, text=True, check=False)
  assert run.returncode == 0, run.stderr[-2000:]
  got = json.loads(run.stdout.strip().splitlines()[-1])
  ids, _ = shared_batch()
  assert got['target'] == [[0, 1, 2, 3], [4, 5, 6, 7]]
  assert got['negatives'] == [ids['negatives'][:2].numpy().tolist(),
                              ids['negatives'][2:].numpy().tolist()]


EVEN = '''
import json
import tensorflow as tf
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices('CPU')[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)
from tpu_embeddings.training import tpu_adapter
strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
rows = tf.reshape(tf.range(16), [2, 8])
dataset = tf.data.Dataset.from_tensor_slices(rows).map(lambda x: (
    {'id': x, 'bag': tf.RaggedTensor.from_row_lengths(
        x, tf.fill([8], tf.constant(1, tf.int64)))}, {}))
got = []
for ids, _ in tpu_adapter.distribute(strategy, lambda _: dataset):
  got.append([[v.numpy().tolist() for v in
               strategy.experimental_local_results(ids['id'])],
              [v.to_list() for v in
               strategy.experimental_local_results(ids['bag'])]])
print(json.dumps(got))
'''


def test_batches_whose_features_all_have_its_rows_split_in_order():
  """Each replica gets its consecutive rows of every global batch, ragged
  features with them, as experimental_distribute_dataset split them."""
  run = subprocess.run([sys.executable, '-c', EVEN], cwd=paths.REPO,
                       capture_output=True, text=True, check=False)
  assert run.returncode == 0, run.stderr[-2000:]
  got = json.loads(run.stdout.strip().splitlines()[-1])
  assert [ids for ids, _ in got] == [[[0, 1, 2, 3], [4, 5, 6, 7]],
                                     [[8, 9, 10, 11], [12, 13, 14, 15]]]
  assert got[1][1] == [[[8], [9], [10], [11]], [[12], [13], [14], [15]]]


def test_negatives_rows_that_do_not_split_over_the_replicas_are_refused():
  ids, _ = shared_batch()
  spec = {n: tf.TensorSpec.from_tensor(t) for n, t in ids.items()}
  with pytest.raises(ValueError, match="feature 'negatives' has 4 rows per "
                     'batch, which do not split evenly over the 8 TPU'):
    tpu_adapter.per_replica_input_shapes(spec, 8)


def test_tpu_activations_of_shared_negatives_equal_the_cpu_adapters():
  spec = skipgram_spec(dim=D, vocabulary_size=500)
  ids, _ = shared_batch()
  inputs, activations = tpu_shapes.enqueue_shapes(spec, ids)
  halves = tpu_shapes.per_replica(ids, 2)
  assert inputs == {n: [2 * s[0]] + s[1:] for n, s in halves.items()}
  config = SkipGramConfig(batch_size=B, shared_negatives=S,
                          negative_group=B // GROUPS)
  adapter = cpu_adapter.for_skipgram(spec, B, settings=config)
  adapter.build()
  cpu = adapter.embedding.embedding_lookup(ids)
  assert activations == {n: t.shape.as_list() for n, t in cpu.items()}
  assert activations['negatives'] == [GROUPS, S, D]
