"""CPU-trained checkpoints have the TPU's keys and meaning; TPU -> CPU hand-off.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf
from tfx.types import standard_artifacts

from components.trainer import executor
from tests.support import artifact_fixtures as fx
from tests.support import trainer_outputs
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec import embedding_variables
from tpu_embeddings.training import checkpoints
from tpu_embeddings.training import cpu_adapter

LINES = [['a', 'b', 'c', 'd'], ['b', 'c', 'e'], ['a', 'e', 'f', 'b', 'c'],
         ['d', 'f', 'a']] * 20
COUNTS = collections.Counter(t for line in LINES for t in line)


def _examples(uri):
  """An Examples artifact of span 3 at `uri`."""
  artifact = standard_artifacts.Examples()
  artifact.uri = uri
  artifact.set_int_custom_property('span', 3)
  return artifact


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
  root = tmp_path_factory.mktemp('inputs')
  fx.write_examples(str(root / 'examples'), {'train': LINES, 'eval': LINES})
  fx.write_vocabulary(str(root / 'vocabulary'), COUNTS)
  return str(root / 'examples'), str(root / 'vocabulary')


def cpu_mode_tpu_checkpoint(spec, directory):
  """A checkpoint saved by TPUEmbedding built outside any TPU strategy."""
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  return tf.train.Checkpoint(**{model_layout.EMBEDDING_KEY: embedding}).save(
      f'{directory}/ckpt')


def embedding_shapes(path):
  return {k: v for k, v in tf.train.list_variables(path)
          if k.startswith(model_layout.EMBEDDING_KEY + '/')}


@pytest.mark.slow
@pytest.mark.parametrize('optimizer,params', [
    ('sgd', {'learning_rate': 0.5}),
    ('adagrad', {'learning_rate': 0.5}),
    ('adam', {'learning_rate': 0.05}),
    ('ftrl', {'learning_rate': 0.5}),
])
def test_cpu_checkpoint_keys_and_shapes_equal_tpu_ones(inputs, tmp_path,
                                                       optimizer, params):
  examples, vocabulary = inputs
  spec = skipgram_spec(dim=4, optimizer=optimizer, **params)
  model = str(tmp_path / 'model')
  executor.train(executor.TrainerArgs([_examples(examples)], vocabulary, model,
                                      str(tmp_path / 'run')),
                 executor.TrainerConfig(embedding_spec=spec.to_json(),
                                        batch_size=16, train_steps=6,
                                        epochs=0, checkpoint_every=3,
                                        subsample=0.0))
  cpu = embedding_shapes(model_layout.latest_checkpoint(model))
  tpu = embedding_shapes(cpu_mode_tpu_checkpoint(
      spec.with_vocabulary_size('tokens', len(COUNTS)), str(tmp_path / 'tpu')))
  assert cpu == tpu
  slots = skipgram_spec(optimizer=optimizer).optimizer.slot_names
  assert set(cpu) == {model_layout.table_key('tokens')} | {
      model_layout.slot_key('tokens', s) for s in slots}
  meta = model_layout.read_metadata(model)
  assert meta['steps'] == 6 and meta['device'] == 'cpu'
  assert meta['spans'] == [3] and meta['optimizer'] == optimizer


@pytest.mark.slow
def test_tpu_checkpoint_restores_into_cpu_trainer_and_training_continues(
    inputs, tmp_path):
  examples, _ = inputs
  spec = skipgram_spec(dim=4, optimizer='adagrad', learning_rate=0.5)
  model = str(tmp_path / 'model')
  # A Model artifact as a TPU job leaves it: TPU-format checkpoint at step 7
  # whose table and slots hold values no initializer would produce.
  vocab = vocabulary_file.from_counts(COUNTS)
  spec = fx.write_tpu_format_model(model, vocab.tokens, spec=spec)
  vocabulary_file.write(model, vocab)
  rng = np.random.default_rng(0)
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  tpu_values = {
      'parameters': rng.normal(size=(len(vocab), 4)).astype(np.float32),
      'accumulators': rng.uniform(0.5, 2.0,
                                  size=(len(vocab), 4)).astype(np.float32)}
  for name, value in tpu_values.items():
    embedding_variables.table_variables(embedding)['tokens'][name].assign(value)
  tpu_checkpoint = tf.train.Checkpoint(
      **{model_layout.EMBEDDING_KEY: embedding},
      step=tf.Variable(7, dtype=tf.int64))
  tf.train.CheckpointManager(tpu_checkpoint,
                             model_layout.checkpoint_dir(model),
                             max_to_keep=3).save(checkpoint_number=7)

  # The CPU adapter restores it bit-exact (table and slot)...
  adapter = cpu_adapter.for_skipgram(spec, 16)
  adapter.build()
  state = checkpoints.create(adapter.embedding, str(tmp_path / 'scratch'))
  checkpoints.restore(state, spec, model_layout.latest_checkpoint(model))
  assert int(state.step) == 7
  for name, value in tpu_values.items():
    np.testing.assert_array_equal(adapter.variables['tokens'][name].numpy(),
                                  value)

  # ...and the trainer, rerun on that output, continues from step 7 (a TPU
  # training of the same inputs and settings has the same key).
  args = executor.TrainerArgs([_examples(examples)], model, model,
                              str(tmp_path / 'run'))
  config = executor.TrainerConfig(embedding_spec=spec.to_json(),
                                  batch_size=16, train_steps=12, epochs=0,
                                  subsample=0.0)
  trainer_outputs.own_output(args, config.replace(tpu='auto'))
  meta = executor.train(args, config)
  assert meta['resumed_from_step'] == 7 and meta['steps'] == 12
  assert meta['steps_this_run'] == 5
  reader = tf.train.load_checkpoint(model_layout.latest_checkpoint(model))
  table = reader.get_tensor(model_layout.table_key('tokens'))
  accumulators = reader.get_tensor(model_layout.slot_key('tokens',
                                                         'accumulators'))
  changed = np.any(table != tpu_values['parameters'], axis=1)
  assert changed.any()
  # Adagrad accumulators only grow, and only on trained rows.
  assert np.all(accumulators >= tpu_values['accumulators'])
  np.testing.assert_array_equal(
      changed, np.any(accumulators > tpu_values['accumulators'], axis=1))


def test_checkpoint_without_slots_is_a_clear_error(inputs, tmp_path):
  examples, vocabulary = inputs
  model = str(tmp_path / 'model')
  vocab = vocabulary_file.read(vocabulary)
  spec = skipgram_spec(dim=4, optimizer='adagrad').with_vocabulary_size(
      'tokens', len(vocab))
  spec.save(model)
  vocabulary_file.write(model, vocab)
  serving = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), optimizer=None)
  serving.build()
  tf.train.CheckpointManager(
      tf.train.Checkpoint(**{model_layout.EMBEDDING_KEY: serving}),
      model_layout.checkpoint_dir(model), max_to_keep=1).save()
  config = executor.TrainerConfig(embedding_spec=spec.to_json(),
                                  batch_size=16, train_steps=2, epochs=0)
  args = executor.TrainerArgs([_examples(examples)], vocabulary, model,
                              str(tmp_path / 'run'))
  # Checkpoints the output holds are continued only by their own training.
  with pytest.raises(ValueError, match='already holds checkpoints of another'):
    executor.train(args, config)
  trainer_outputs.own_output(args, config)
  with pytest.raises(ValueError, match="slot 'accumulators' of table 'tokens'"):
    executor.train(args, config)
