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
