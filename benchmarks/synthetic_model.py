"""A Model artifact of any size for the benchmarks (TPU checkpoint format).

The checkpoint is saved by `TPUEmbedding` built outside any TPU strategy, so
it has the TPU's keys and optimizer slots.

`write_model`: tokens `t0 .. t<rows-1>`, the tables as initialized.
`write_topic_model`: the rows of a `benchmarks.topic_corpus` vocabulary
(row r is of topic r % topics), word2vec's two tables set so that a token
scores the tokens of its own topic high and every other low: what training
on that corpus learns, without training. The validator blesses it with
its default gates (its held-out loss is far below the frequency-only
model's), so it goes through export, push and every consumer.
"""

import os

import numpy as np

# Rows written per assignment: no table-sized temporary.
_CHUNK_ROWS = 1 << 18


def write_model(model_uri: str, rows: int, dim: int,
                optimizer: str = 'sgd') -> None:
  import tensorflow as tf

  from tpu_embeddings.artifacts import model_layout
  from tpu_embeddings.artifacts import vocabulary_file
  from tpu_embeddings.models.skipgram_features import skipgram_spec
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


def topic_rows(start: int, stop: int, dim: int, topics: int, which: str,
               seed: int = 0) -> np.ndarray:
  """Rows `start:stop` of the `tokens` or `contexts` table of
  `write_topic_model` (float32): a topic's direction plus a shared one,
  with a little noise; the same rows every call."""
  if dim < topics + 1:
    raise ValueError(f'topic tables need dim >= topics + 1, got {dim}')
  rng = np.random.default_rng([seed, start, 0 if which == 'tokens' else 1])
  n = stop - start
  out = rng.normal(0.0, 0.05, size=(n, dim)).astype(np.float32)
  topic = np.arange(start, stop) % topics
  # tokens: e_topic + u; contexts: 6 e_topic - 4 u. A pair of one topic
  # scores 2, of two topics -4.
  out[np.arange(n), topic] += 1.0 if which == 'tokens' else 6.0
  out[:, topics] += 1.0 if which == 'tokens' else -4.0
  return out


def write_topic_model(model_uri: str, vocabulary_uri: str, dim: int = 64,
                      topics: int = 32, optimizer: str = 'adagrad',
                      context_table: bool = True) -> None:
  """The Model of a topic corpus's vocabulary (module docstring); its
  vocabulary.tsv is the Vocabulary artifact's."""
  import shutil

  import tensorflow as tf

  from tpu_embeddings.artifacts import model_layout
  from tpu_embeddings.artifacts import vocabulary_file
  from tpu_embeddings.models.skipgram_features import skipgram_spec
  source = os.path.join(vocabulary_uri, vocabulary_file.VOCABULARY_FILENAME)
  rows = vocabulary_file.count_lines(source)
  spec = skipgram_spec(dim=dim, optimizer=optimizer, vocabulary_size=rows,
                       context_table=context_table)
  os.makedirs(model_uri, exist_ok=True)
  spec.save(model_uri)
  shutil.copyfile(source, os.path.join(
      model_uri, vocabulary_file.VOCABULARY_FILENAME))
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  for config, variable in embedding.embedding_tables.items():
    for start in range(0, rows, _CHUNK_ROWS):
      stop = min(rows, start + _CHUNK_ROWS)
      variable[start:stop].assign(
          topic_rows(start, stop, dim, topics, config.name))
  ckpt = tf.train.Checkpoint(**{model_layout.EMBEDDING_KEY: embedding},
                             step=tf.Variable(0, dtype=tf.int64))
  tf.train.CheckpointManager(ckpt, model_layout.checkpoint_dir(model_uri),
                             max_to_keep=1).save()
  model_layout.write_metadata(model_uri, {
      'steps': 0, 'spans': [0], 'device': 'cpu', 'dim': dim,
      'vocabulary_size': rows, 'synthetic': 'topic tables'})
