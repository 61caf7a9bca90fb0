"""skipgram_module.input_fn keeps the looked-up ids in memory between passes
only when there are later passes and the vocabulary fits CACHED_TOKENS."""

import pytest
import tensorflow as tf

from tests.support import artifact_fixtures as fx
from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.artifacts.vocabulary_file import TokenCounts
from tpu_embeddings.models import skipgram_module
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.skipgram_config import SkipGramConfig


def dataset_ops(ds: tf.data.Dataset):
  graph = tf.compat.v1.GraphDef.FromString(
      ds._as_serialized_graph().numpy())
  return {node.op for node in graph.node}


@pytest.mark.parametrize('epochs, cap, cached', [
    (2, 1000, True), (0, 1000, True), (1, 1000, False), (2, 299, False)])
def test_ids_are_kept_for_later_passes_of_a_corpus_that_fits(
    tmp_path, monkeypatch, epochs, cap, cached):
  uri = fx.write_examples(str(tmp_path), {'train': [['a', 'b', 'c']] * 100})
  ctx = ModelContext(
      vocabularies=vocabularies.single(
          TokenCounts(('a', 'b', 'c'), (100, 100, 100))),
      settings=SkipGramConfig(batch_size=8, window=2, negatives=1,
                              subsample=0.0),
      examples_uris=(uri,))
  monkeypatch.setattr(skipgram_module, 'CACHED_TOKENS', cap)
  ds = skipgram_module.input_fn(ctx, epochs)
  assert any(op.startswith('CacheDataset') for op in dataset_ops(ds)) == (
      cached)
  (ids, extras), = ds.take(1)
  assert ids['target'].shape == [8] and extras == {}


def two_token_context(tmp_path, shared_negatives=0):
  """16 sequences of two tokens of their own: one pass gives each token
  once as a target (no subsampling), 32 pairs in all."""
  sequences = [[f's{i}a', f's{i}b'] for i in range(16)]
  tokens = tuple(t for s in sequences for t in s)
  uri = fx.write_examples(str(tmp_path), {'train': sequences})
  return ModelContext(
      vocabularies=vocabularies.single(TokenCounts(tokens, (1,) * 32)),
      settings=SkipGramConfig(batch_size=8, window=1, negatives=1,
                              subsample=0.0, shared_negatives=shared_negatives,
                              negative_group=4),
      examples_uris=(uri,), global_batch_size=8)


def pipeline(index):
  return tf.distribute.InputContext(num_input_pipelines=2,
                                    input_pipeline_id=index,
                                    num_replicas_in_sync=2)


def test_two_input_pipelines_read_disjoint_shares_that_cover_the_data(
    tmp_path):
  ctx = two_token_context(tmp_path)
  targets = []
  for index in (0, 1):
    batches = list(skipgram_module.input_fn(ctx, 1, input_context=pipeline(
        index)))
    assert {ids['target'].shape[0] for ids, _ in batches} == {4}
    targets.append([int(t) for ids, _ in batches for t in ids['target']])
  assert not set(targets[0]) & set(targets[1])
  assert sorted(targets[0] + targets[1]) == list(range(32))


def test_one_pipeline_reads_the_batches_of_the_whole_data(tmp_path):
  ctx = two_token_context(tmp_path)
  alone = [ids['target'].numpy().tolist()
           for ids, _ in skipgram_module.input_fn(ctx, 1)]
  single = [ids['target'].numpy().tolist()
            for ids, _ in skipgram_module.input_fn(
                ctx, 1, input_context=tf.distribute.InputContext())]
  assert alone == single and sorted(sum(alone, [])) == list(range(32))


def test_each_pipeline_draws_its_share_of_the_shared_negatives(tmp_path):
  ctx = two_token_context(tmp_path, shared_negatives=3)
  (ids, _), = skipgram_module.input_fn(
      ctx, 1, input_context=pipeline(1)).take(1)
  # 8 pairs per global batch in groups of 4: one group per pipeline.
  assert ids['target'].shape == [4] and ids['negatives'].shape == [1, 3]
