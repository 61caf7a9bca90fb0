"""Two-tower retrieval: (user, recent items) -> the next (item, category).

A module file of the tpu-embeddings pipeline ("Write your own model" in the
README). On the generated interactions:

    python -m pipelines demo-data --interactions --out data
    python -m pipelines run --data data --home home \\
        --module-file examples/two_tower/two_tower_model.py \\
        --set example_gen.format=csv

The query tower reads the user's id and a bag of their last items, the
candidate tower an item's id and category; both end in unit vectors. Every
other item of a batch is a negative (in-batch softmax), with the logQ
correction for how often each item appears as a candidate. Items share one
table between the history bag and the candidate id.
"""

import tensorflow as tf

from tpu_embeddings.models import retrieval
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.spec.embedding_spec import FeatureSpec
from tpu_embeddings.spec.embedding_spec import TableSpec
from tpu_embeddings.spec.optimizer_spec import OptimizerSpec

# Examples feature -> the vocabulary of its tokens; `history` and `item_id`
# share the item vocabulary (and table).
FEATURES = {'user_id': 'user_id', 'history': 'item_id', 'item_id': 'item_id',
            'item_category': 'item_category'}
QUERY = ('user_id', 'history')
CANDIDATE = ('item_id', 'item_category')
METRICS = {'recall_at_10': 'higher'}
HUB = {'call': 'query', 'features': QUERY}
SETTINGS = {'trainer.batch_size': 512, 'trainer.epochs': 3,
            'trainer.train_steps': 0, 'trainer.learning_rate_decay': False,
            'validator.max_eval_examples': 5000}
DIM = 32
TEMPERATURE = 0.1


def embedding_spec(ctx):
  del ctx  # sizes come from the vocabularies (vocabulary_size 0)
  return EmbeddingSpec(
      tables=(TableSpec('user', DIM, combiner='mean'),
              TableSpec('item', DIM, combiner='mean'),
              TableSpec('category', 8, combiner='mean')),
      features=(FeatureSpec('user_id', 'user'),
                FeatureSpec('history', 'item'),
                FeatureSpec('item_id', 'item'),
                FeatureSpec('item_category', 'category')),
      optimizer=OptimizerSpec('adagrad', (('initial_accumulator_value', 1e-3),
                                          ('learning_rate', 0.2))))


def _tower(name):
  l2 = tf.keras.regularizers.l2(1e-6)  # exported as REGULARIZATION_LOSSES
  return tf.keras.Sequential([
      tf.keras.layers.Dense(64, 'relu', kernel_regularizer=l2),
      # A small momentum lets a consumer fine-tune on little data.
      tf.keras.layers.BatchNormalization(momentum=0.9),
      tf.keras.layers.Dropout(0.1),
      tf.keras.layers.Dense(DIM, kernel_regularizer=l2)], name=name)


class TwoTower(tf.keras.Model):
  """Unit query and candidate vectors from the features' activations."""

  def __init__(self):
    super().__init__()
    self.query_tower = _tower('query')
    self.candidate_tower = _tower('candidate')

  def query(self, activations, training=False):
    x = tf.concat([activations[f] for f in QUERY], axis=1)
    return tf.math.l2_normalize(self.query_tower(x, training=training), -1)

  def candidate(self, activations, training=False):
    x = tf.concat([activations[f] for f in CANDIDATE], axis=1)
    return tf.math.l2_normalize(self.candidate_tower(x, training=training),
                                -1)

  def call(self, activations, training=False):
    return (self.query(activations, training),
            self.candidate(activations, training))


def model_fn(ctx):
  del ctx
  return TwoTower()


def dense_optimizer(ctx):
  del ctx
  return tf.keras.optimizers.Adam(2e-3)


def extras_fn(ids, examples, ctx):
  """log Q of each row's item: how often it comes up as a candidate."""
  del examples
  item = ids['item_id'].to_tensor(0, shape=[None, 1])[:, 0]
  return {'log_q': tf.gather(ctx.log_frequency('item_id'), item)}


def loss_fn(model, activations, extras, ctx, training):
  """In-batch softmax, logQ-corrected: this replica's share of the loss."""
  query, candidate = model(activations, training=training)
  logits = (tf.matmul(query, candidate, transpose_b=True) / TEMPERATURE -
            extras['log_q'][tf.newaxis, :])
  labels = tf.range(tf.shape(logits)[0])
  loss = ctx.scale_loss(
      tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
  if model.losses:
    loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
  return loss


def signatures(model, embed, ctx):
  """Raw features in: ids and categories as strings (an integer id as its
  decimal string), a history bag as its items separated by spaces."""
  del ctx
  text = tf.TensorSpec([None], tf.string)

  @tf.function(input_signature=[text, text])
  def query(user_id, history):
    return {'embedding': model.query(embed(
        {'user_id': user_id, 'history': history}))}

  @tf.function(input_signature=[text, text])
  def candidate(item_id, item_category):
    return {'embedding': model.candidate(embed(
        {'item_id': item_id, 'item_category': item_category}))}

  return {'serving_default': query, 'candidate': candidate}


def eval_fn(serve, ctx):
  """recall@10 of each held-out next item among every item seen in
  training, the query's own history left out."""
  return {'recall_at_10': retrieval.recall_at_k(
      serve['serving_default'], serve['candidate'],
      queries=ctx.eval_examples(), catalog=ctx.catalog(CANDIDATE),
      answer='item_id', k=10, exclude='history')}
