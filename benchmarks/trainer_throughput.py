"""CPU trainer throughput vs a plain Keras skip-gram model on identical batches.

    python -m benchmarks.trainer_throughput [--batch-size 1024] [--dim 64]

Baseline: `tf.keras.layers.Embedding` (one table for target, context and
negatives, like the trainer's tied `tokens` table) + dot-product logits +
sigmoid cross-entropy + `tf.keras.optimizers.Adagrad`, trained with
`model.fit`. Candidate: the EmbeddingTrainer's CPU adapter
(`TPUEmbeddingForServing` + the TPU Adagrad rule on its slot variables).

Both consume the same batches, built once by the shared skip-gram pipeline
from a Zipf-distributed synthetic corpus and cached in memory, so only the
training step is measured. Rounds alternate between the two so that load from
other processes on the machine hits both alike; the table reports the median
round. Target: ratio >= 1.5 against the plain `fit` baseline; a Keras run
with `steps_per_execution` (per-step Python overhead amortized, as the
trainer does by running many steps per `tf.function` call) is printed too.
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf

from components.trainer.cpu_adapter import CpuAdapter
from tpu_embeddings.models import skipgram
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE
from tpu_embeddings.models.skipgram_features import skipgram_spec


def make_batches(vocabulary_size: int, batch_size: int, negatives: int,
                 num_batches: int, seed: int = 0) -> tf.data.Dataset:
  rng = np.random.default_rng(seed)
  ranks = np.arange(1, vocabulary_size + 1)
  probabilities = 1.0 / ranks
  probabilities /= probabilities.sum()
  counts = np.maximum((probabilities * 1e7).astype(np.int64), 1)
  tokens = [f'tok{i}' for i in range(vocabulary_size)]
  data = skipgram.SkipGramData(tokens, counts, skipgram.SkipGramConfig(
      batch_size=batch_size, negatives=negatives, seed=seed))
  lines = rng.choice(vocabulary_size, size=(num_batches * batch_size // 40 + 1,
                                            20), p=probabilities)
  sequences = tf.data.Dataset.from_tensor_slices(
      tf.constant(np.asarray(tokens)[lines]))
  batches = data.batches(sequences, epochs=0).take(num_batches).cache()
  for _ in batches:  # fill the cache
    pass
  return batches


def keras_model(vocabulary_size: int, dim: int, negatives: int,
                learning_rate: float,
                steps_per_execution: int = 1) -> tf.keras.Model:
  embedding = tf.keras.layers.Embedding(
      vocabulary_size, dim,
      embeddings_initializer=tf.keras.initializers.RandomUniform(
          -0.5 / dim, 0.5 / dim))
  target = tf.keras.Input([], dtype=tf.int32, name=TARGET_FEATURE)
  context = tf.keras.Input([], dtype=tf.int32, name=CONTEXT_FEATURE)
  negative = tf.keras.Input([negatives], dtype=tf.int32,
                            name=NEGATIVES_FEATURE)
  t, c, n = embedding(target), embedding(context), embedding(negative)
  # Logits as in the TensorFlow word2vec tutorial (einsum dot products).
  positive_logit = tf.einsum('bd,bd->b', t, c)[:, None]            # [B, 1]
  negative_logits = tf.einsum('bd,bkd->bk', t, n)                  # [B, K]
  logits = tf.concat([positive_logit, negative_logits], axis=1)
  model = tf.keras.Model({TARGET_FEATURE: target, CONTEXT_FEATURE: context,
                          NEGATIVES_FEATURE: negative}, logits)
  model.compile(
      optimizer=tf.keras.optimizers.Adagrad(learning_rate),
      loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
      steps_per_execution=steps_per_execution)
  return model


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--vocabulary-size', type=int, default=20_000)
  parser.add_argument('--dim', type=int, default=64)
  parser.add_argument('--batch-size', type=int, default=1024)
  parser.add_argument('--negatives', type=int, default=5)
  parser.add_argument('--steps', type=int, default=200,
                      help='steps per timed round')
  parser.add_argument('--rounds', type=int, default=5)
  args = parser.parse_args(argv)
  b, k = args.batch_size, args.negatives
  batches = make_batches(args.vocabulary_size, b, k, num_batches=200)

  spec = skipgram_spec(dim=args.dim, optimizer='adagrad',
                       vocabulary_size=args.vocabulary_size, learning_rate=0.1)
  adapter = CpuAdapter(spec, b)
  adapter.build()
  iterator = adapter.iterator(batches.repeat())

  labels = tf.concat([tf.ones([b, 1]), tf.zeros([b, k])], axis=1)
  model = keras_model(args.vocabulary_size, args.dim, k, 0.1)
  # For reference: Keras with its per-step Python overhead amortized.
  fused = keras_model(args.vocabulary_size, args.dim, k, 0.1,
                      steps_per_execution=args.steps)
  keras_data = batches.map(lambda f: (f, labels)).repeat()

  def run_trainer():
    start = time.perf_counter()
    done = adapter.train(iterator, args.steps).size
    return done * b / (time.perf_counter() - start)

  def run_keras(m):
    start = time.perf_counter()
    m.fit(keras_data, steps_per_epoch=args.steps, epochs=1, verbose=0)
    return args.steps * b / (time.perf_counter() - start)

  adapter.train(iterator, 10)  # trace and warm up all three
  model.fit(keras_data, steps_per_epoch=10, epochs=1, verbose=0)
  fused.fit(keras_data, steps_per_epoch=args.steps, epochs=1, verbose=0)
  trainer_rates, keras_rates, fused_rates = [], [], []
  for _ in range(args.rounds):
    trainer_rates.append(run_trainer())
    keras_rates.append(run_keras(model))
    fused_rates.append(run_keras(fused))
  trainer, keras, keras_fused = (statistics.median(trainer_rates),
                                 statistics.median(keras_rates),
                                 statistics.median(fused_rates))
  print(f'batch {b}, negatives {k}, dim {args.dim}, vocabulary '
        f'{args.vocabulary_size}, {args.steps} steps x {args.rounds} rounds '
        '(median round)')
  print(f'{"run":<44} {"examples/s":>12} {"ratio":>7}')
  print(f'{"baseline: Keras Embedding + Adagrad (fit)":<44} {keras:>12,.0f} '
        f'{1.0:>7.2f}')
  print(f'{"Keras, steps_per_execution=" + str(args.steps):<44} '
        f'{keras_fused:>12,.0f} {keras_fused / keras:>7.2f}')
  print(f'{"EmbeddingTrainer CPU adapter (TPU Adagrad)":<44} {trainer:>12,.0f} '
        f'{trainer / keras:>7.2f}')
  print('target ratio >= 1.5: '
        f'{"met" if trainer / keras >= 1.5 else "NOT met"}')


if __name__ == '__main__':
  main()
