"""The Keras skip-gram model the trainer's step is measured against.

One shared `Embedding` for targets, contexts and negatives, as the
benchmarks' trainer presets use one table.
"""

def keras_model(vocabulary_size, dim, negatives, steps_per_execution):
  """Embedding + dot-product logits + sigmoid cross-entropy + Keras Adagrad
  on {target, context, negatives} batches, compiled with
  `steps_per_execution` (trainer_throughput's step baseline)."""
  import tensorflow as tf
  embedding = tf.keras.layers.Embedding(
      vocabulary_size, dim,
      embeddings_initializer=tf.keras.initializers.RandomUniform(
          -0.5 / dim, 0.5 / dim))
  target = tf.keras.Input([], dtype=tf.int32, name='target')
  context = tf.keras.Input([], dtype=tf.int32, name='context')
  negative = tf.keras.Input([negatives], dtype=tf.int32, name='negatives')
  t, c, n = embedding(target), embedding(context), embedding(negative)
  positive_logit = tf.einsum('bd,bd->b', t, c)[:, None]
  negative_logits = tf.einsum('bd,bkd->bk', t, n)
  model = tf.keras.Model(
      {'target': target, 'context': context, 'negatives': negative},
      tf.concat([positive_logit, negative_logits], axis=1))
  model.compile(
      optimizer=tf.keras.optimizers.Adagrad(1.0,
                                            initial_accumulator_value=1e-3),
      loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
      steps_per_execution=steps_per_execution)
  return model
