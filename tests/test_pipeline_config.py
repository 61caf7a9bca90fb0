import json

import pytest
import tensorflow as tf

from components import skipgram
from components.trainer.config import TableConfig, TrainerConfig
from pipelines.config import PipelineConfig


def test_untrained_loss_limit_is_just_below_an_untrained_tables_loss():
  config = PipelineConfig(trainer=TrainerConfig(negatives=7))
  batch, dim = 4, 3
  # A table that learned nothing: every logit is 0.
  loss, _ = skipgram.loss_and_gradients(
      tf.zeros([batch, dim]), tf.zeros([batch, dim]),
      tf.zeros([batch, config.trainer.negatives, dim]), batch)
  assert config.untrained_loss_limit() == pytest.approx(0.99 * float(loss))


def test_spec_follows_the_config():
  spec = PipelineConfig(table=TableConfig(dim=8, optimizer='adam', learning_rate=0.01)).embedding_spec()
  assert spec.tables[0].dim == 8 and spec.optimizer.kind == 'adam'
  assert 'initial_accumulator_value' not in spec.optimizer.hyperparameters
  adagrad = PipelineConfig(table=TableConfig(initial_accumulator_value=0.5)).embedding_spec()
  assert adagrad.optimizer.hyperparameters['initial_accumulator_value'] == 0.5


def test_unknown_field_is_named():
  with pytest.raises(ValueError, match="unknown field 'steps'"):
    PipelineConfig.from_json(json.dumps({'steps': 3}))
