"""When the training loop checkpoints: by step count, by time, at the end."""

import collections
import os

import pytest
import tensorflow as tf

from components.trainer import executor
from tests.support import artifact_fixtures as fx
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models.skipgram_features import skipgram_spec

LINES = [['a', 'b', 'c', 'd'], ['b', 'c', 'e'], ['a', 'e', 'f', 'b', 'c'],
         ['d', 'f', 'a']] * 20


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
  root = tmp_path_factory.mktemp('inputs')
  fx.write_examples(str(root / 'examples'), {'train': LINES})
  fx.write_vocabulary(str(root / 'vocabulary'),
                      collections.Counter(t for l in LINES for t in l))
  return [fx.SpanlessExamples(str(root / 'examples'))], str(root / 'vocabulary')


def saved_steps(inputs, tmp_path, **config):
  examples, vocabulary = inputs
  model = str(tmp_path / 'model')
  executor.train(executor.TrainerArgs(examples, vocabulary, model,
                                      str(tmp_path / 'run')),
                 executor.TrainerConfig(
                     embedding_spec=skipgram_spec(dim=4).to_json(),
                     batch_size=8, train_steps=6, epochs=0, log_every=2,
                     **config))
  state = tf.train.get_checkpoint_state(model_layout.checkpoint_dir(model))
  return [int(os.path.basename(p).split('-')[1])
          for p in state.all_model_checkpoint_paths]


@pytest.mark.slow
def test_default_checkpoints_by_time_not_by_steps(inputs, tmp_path):
  config = executor.TrainerConfig()
  assert config.checkpoint_every == 0 and config.checkpoint_seconds > 0
  assert saved_steps(inputs, tmp_path) == [6]  # 6 fast steps: only the end


@pytest.mark.slow
def test_elapsed_checkpoint_seconds_saves_after_the_next_call(inputs, tmp_path):
  assert saved_steps(inputs, tmp_path, checkpoint_every=0,
                     checkpoint_seconds=1e-9) == [2, 4, 6]


@pytest.mark.slow
def test_checkpoint_every_still_saves_by_steps(inputs, tmp_path):
  assert saved_steps(inputs, tmp_path, checkpoint_every=3,
                     checkpoint_seconds=0) == [3, 6]


def test_no_checkpoint_interval_at_all_is_refused():
  with pytest.raises(ValueError, match='set checkpoint_every or '
                     'checkpoint_seconds'):
    executor.TrainerConfig(checkpoint_every=0, checkpoint_seconds=0)
  with pytest.raises(ValueError,
                     match='checkpoint_seconds must be a number >= 0'):
    executor.TrainerConfig(checkpoint_seconds=-1)
