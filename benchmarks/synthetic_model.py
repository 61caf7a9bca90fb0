"""A Model artifact of any size for the benchmarks (TPU checkpoint format).

The checkpoint is saved by `TPUEmbedding` built outside any TPU strategy, so
it has the TPU's keys and optimizer slots; tokens are `t0 .. t<rows-1>`.
"""

import os


def write_model(model_uri: str, rows: int, dim: int,
                optimizer: str = 'sgd') -> None:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from tpu_embeddings.artifacts import model_layout  # pylint: disable=g-import-not-at-top
  from tpu_embeddings.artifacts import vocabulary_file  # pylint: disable=g-import-not-at-top
  from tpu_embeddings.models.skipgram_features import skipgram_spec  # pylint: disable=g-import-not-at-top
  spec = skipgram_spec(dim=dim, optimizer=optimizer, vocabulary_size=rows)
  os.makedirs(model_uri, exist_ok=True)
  spec.save(model_uri)
  # Streamed: a 10M-token vocabulary as Python tuples would cost ~1 GiB.
  with open(os.path.join(model_uri, vocabulary_file.VOCABULARY_FILENAME),
            'w', encoding='utf-8') as f:
    for i in range(rows):
      f.write(f't{i}\t{rows - i}\n')
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  ckpt = tf.train.Checkpoint(**{model_layout.EMBEDDING_KEY: embedding},
                             step=tf.Variable(0, dtype=tf.int64))
  tf.train.CheckpointManager(ckpt, model_layout.checkpoint_dir(model_uri),
                             max_to_keep=1).save()
  model_layout.write_metadata(model_uri, {'steps': 0, 'spans': [0],
                                          'device': 'cpu'})
