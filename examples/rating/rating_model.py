"""Rating regression: matrix factorisation with user and item biases.

A module file of the tpu-embeddings pipeline, walked through in
docs/own_model_from_scratch.md. On generated ratings:

    python -m pipelines demo-data --ratings --out data --spans 1
    python -m pipelines run --data data --home home \\
        --module-file examples/rating/rating_model.py \\
        --set example_gen.format=csv

A predicted rating is the global mean, plus the user's and the item's bias,
plus the dot product of their vectors. Each id's bias is the last column of
its own row (`spec_builder.split_bias`): a feature reads one table. The
label is the `rating` column, parsed from the Examples in `extras_fn`; ids
are the `user_id` and `item_id` columns, integers or strings.
"""

import numpy as np
import tensorflow as tf

from tpu_embeddings.spec import spec_builder

FEATURES = {'user_id': 'user_id', 'item_id': 'item_id'}
LABEL = 'rating'
METRICS = {'rmse': 'lower'}
# Every id rated in training gets a row (L2 keeps rare ones near zero);
# ratings come sorted by time, so the shuffle holds a whole span; every
# held-out rating is scored.
SETTINGS = {'trainer.batch_size': 256, 'trainer.epochs': 10,
            'trainer.train_steps': 0, 'trainer.learning_rate_decay': False,
            'trainer.shuffle_buffer': 200_000, 'vocabulary.min_count': 1,
            'validator.max_eval_examples': 1_000_000}
DIM = 32
# L2 on each example's rows (vectors and biases): the classic per-rating
# regularisation of matrix factorisation. 0.05 did best of 0.02-0.1 on the
# last 10% in time of MovieLens-100k's training ratings (docs/benchmarks.md).
L2 = 0.05
# Where the global mean starts: the middle of a 1-5 scale.
MEAN_START = 3.0


def embedding_spec(ctx):
  del ctx  # each table is sized from its vocabulary
  return spec_builder.id_tables(FEATURES, dim=DIM,
                                biased=('user_id', 'item_id'))


class Ratings(tf.keras.Model):
  """mean + user bias + item bias + user . item, from the activations."""

  def __init__(self):
    super().__init__()
    self.mean = self.add_weight(
        name='global_mean', shape=[],
        initializer=tf.keras.initializers.Constant(MEAN_START))

  def call(self, activations, training=False):
    user, user_bias = spec_builder.split_bias(activations['user_id'])
    item, item_bias = spec_builder.split_bias(activations['item_id'])
    return (self.mean + user_bias + item_bias +
            tf.reduce_sum(user * item, axis=-1))


def model_fn(ctx):
  del ctx
  return Ratings()


def dense_optimizer(ctx):
  del ctx
  return tf.keras.optimizers.Adam(0.01)  # the global mean alone


def extras_fn(ids, examples, ctx):
  """The label of each row, read from the batch's tf.Examples (int64 or
  float, as the column came)."""
  del ids
  return {LABEL: ctx.numbers(examples, LABEL)}


def loss_fn(model, activations, extras, ctx, training):
  """Squared error plus L2 on the example's rows (vectors and biases):
  this replica's share of the global batch's mean. (The L2 is here, not a
  Keras activity regularizer: a model's `losses` are exported for
  fine-tuning and must not depend on its inputs.)"""
  predicted = model(activations, training=training)
  rows = sum(tf.reduce_sum(tf.square(activations[f]), axis=-1)
             for f in FEATURES)
  return ctx.scale_loss(tf.square(predicted - extras[LABEL]) + L2 * rows)


def signatures(model, embed, ctx):
  """`serving_default`: ids as strings (an integer id as its decimal
  string, "42"); `integer_ids`: the same on int64 ids."""
  del ctx

  def predict(user_id, item_id):
    return {LABEL: model(embed({'user_id': user_id, 'item_id': item_id}))}

  text = tf.TensorSpec([None], tf.string)
  number = tf.TensorSpec([None], tf.int64)
  return {'serving_default': tf.function(predict, [text, text]),
          'integer_ids': tf.function(predict, [number, number])}


def eval_fn(serve, ctx):
  """RMSE of the predicted ratings of the held-out examples."""
  rows = ctx.eval_examples(tuple(FEATURES))
  labels = ctx.eval_numbers(LABEL)
  predicted = serve['serving_default'](**rows)[LABEL]
  return {'rmse': float(np.sqrt(np.mean((predicted - labels) ** 2))),
          'ratings': len(labels)}
