"""The one reader of a built embedding object's variables."""

import tensorflow as tf

from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec import embedding_variables


def test_tables_and_their_slots_by_name():
  spec = skipgram_spec(dim=3, vocabulary_size=7, context_table=True,
                       optimizer='adagrad', learning_rate=0.1)
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  variables = embedding_variables.table_variables(embedding)
  assert {t: sorted(v) for t, v in variables.items()} == {
      'tokens': ['accumulators', 'parameters'],
      'contexts': ['accumulators', 'parameters']}
  tokens = embedding_variables.parameters(embedding, 'tokens')
  assert tokens.shape == [7, 3] and tokens is variables['tokens'][
      'parameters']
