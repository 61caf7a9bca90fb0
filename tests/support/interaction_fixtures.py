"""Small two-tower inputs on disk: interaction Examples and vocabularies."""

import collections
import os

import tensorflow as tf

from pipelines import demo_interactions
from tests.support import paths
from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.artifacts import vocabulary_file

MODULE_FILE = os.path.join(paths.REPO, 'examples', 'two_tower',
                           'two_tower_model.py')
SMALL = demo_interactions.Shape(items=200, categories=8, sequences=120,
                                min_length=10, max_length=30)
# Vocabulary -> the features counted into it (the module's FEATURES).
VOCABULARIES = {'user_id': ('user_id',), 'item_id': ('history', 'item_id'),
                'item_category': ('item_category',)}


def write_examples(uri: str, shape=SMALL) -> dict:
  """An Examples artifact in TFX's layout; {split: rows}."""
  rows = demo_interactions.rows(shape)
  for split, records in rows.items():
    directory = os.path.join(uri, f'Split-{split}')
    os.makedirs(directory, exist_ok=True)
    options = tf.io.TFRecordOptions(compression_type='GZIP')
    with tf.io.TFRecordWriter(os.path.join(
        directory, 'data_tfrecord-00000-of-00001.gz'), options) as w:
      for r in records:
        w.write(tf.train.Example(features=tf.train.Features(feature={
            k: tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[v.encode('utf-8')])) for k, v in r.items()
        })).SerializeToString())
  return rows


def write_vocabularies(uri: str, rows) -> vocabularies.Vocabularies:
  """The vocabularies of the train rows, as VocabularyGen counts them."""
  by_name = {}
  for name, features in VOCABULARIES.items():
    counts = collections.Counter(
        t for r in rows['train'] for f in features for t in r[f].split())
    by_name[name] = vocabulary_file.from_counts(counts)
  found = vocabularies.Vocabularies(by_name, VOCABULARIES)
  vocabularies.write(uri, found)
  return found


def inputs(root: str):
  """Writes SMALL's Examples and vocabularies under `root`."""
  rows = write_examples(os.path.join(root, 'examples'))
  write_vocabularies(os.path.join(root, 'vocabulary'), rows)


def module():
  from components import module_file
  return module_file.from_exec_properties({'module_file': MODULE_FILE})


def train(root: str, name: str = 'model', module_object=None,
          continues: bool = False, **settings):
  """Trains the two-tower module on SMALL; its metadata. `continues`: the
  checkpoints already in the output are this training's (trainer_outputs).
  """
  from components.trainer import executor
  from tests.support import artifact_fixtures
  from tests.support import trainer_outputs
  if not os.path.exists(os.path.join(root, 'examples')):
    inputs(root)
  examples = [artifact_fixtures.SpanlessExamples(
      os.path.join(root, 'examples'))]
  vocabulary = os.path.join(root, 'vocabulary')
  config = dict(batch_size=64, train_steps=12, epochs=0, log_every=4,
                learning_rate_decay=False, projector_tokens=50)
  config.update(settings)
  args = executor.TrainerArgs(examples, vocabulary, os.path.join(root, name),
                              os.path.join(root, name + '-run'))
  module_object = module_object or module()
  if continues:
    trainer_outputs.own_output(args, executor.TrainerConfig(**config),
                               module_object.sha256)
  return executor.train(args, executor.TrainerConfig(**config), module_object)
