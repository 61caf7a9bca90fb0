"""The learning-rate decay: its schedule, and the updates both adapters make."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from components.trainer import executor
from tests.support import artifact_fixtures as fx
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training import cpu_adapter
from tpu_embeddings.training import learning_rate


def test_linear_decay_falls_to_the_final_fraction_and_stays():
  decay = learning_rate.LinearDecay(100)
  assert decay.warmup_steps == 5
  assert float(decay(5)) == pytest.approx(0.95)
  assert float(decay(25)) == pytest.approx(0.75)
  assert float(decay(100)) == pytest.approx(learning_rate.FINAL_FRACTION)
  assert float(decay(250)) == pytest.approx(learning_rate.FINAL_FRACTION)
  assert float(learning_rate.LinearDecay(0)(10**6)) == 1.0
  with pytest.raises(ValueError, match='total_steps must be >= 0'):
    learning_rate.LinearDecay(-1)


def test_the_rate_warms_up_over_the_first_planned_steps():
  decay = learning_rate.LinearDecay(100)
  scales = [float(decay(s)) for s in range(6)]
  assert scales[0] == pytest.approx(1 / 6)
  assert scales == sorted(scales)
  assert scales[4] == pytest.approx(5 / 6 * 0.96)
  assert learning_rate.LinearDecay(10**8).warmup_steps == (
      learning_rate.MAX_WARMUP_STEPS)
  assert learning_rate.LinearDecay(10).warmup_steps == 0


def test_each_step_applies_the_decayed_learning_rate():
  """SGD on a zero target row moves it by lr * scale(step) * gradient: the
  step-s update divided by the step-0 one is 1 - s / total."""
  spec = skipgram_spec(dim=2, optimizer='sgd', vocabulary_size=3,
                       learning_rate=1.0, initializer='zeros')
  adapter = cpu_adapter.for_skipgram(spec, global_batch_size=1,
                                     decay=learning_rate.LinearDecay(4))
  adapter.build()
  table = adapter.variables['tokens']['parameters']
  context = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]], np.float32)
  moves = []
  for step in range(3):
    table.assign(context)
    batch = {'target': [0], 'context': [1], 'negatives': [[2]]}
    ds = tf.data.Dataset.from_tensors(
        ({k: tf.constant(v, tf.int32) for k, v in batch.items()}, {}))
    adapter.train(iter(ds), 1, first_step=step)
    # d loss / d target = (sigmoid(0) - 1) * context = -0.5 * context.
    moves.append(float(table.numpy()[0, 0]))
  assert moves == pytest.approx([0.5, 0.5 * 0.75, 0.5 * 0.5])


@pytest.mark.slow
def test_epochs_decay_over_the_expected_steps(tmp_path):
  lines = [['a', 'b', 'c', 'd', 'e'], ['b', 'c', 'e', 'f']] * 40
  fx.write_examples(str(tmp_path / 'examples'), {'train': lines})
  fx.write_vocabulary(str(tmp_path / 'vocabulary'),
                      collections.Counter(t for l in lines for t in l))
  config = executor.TrainerConfig(
      embedding_spec=skipgram_spec(dim=4).to_json(), batch_size=16,
      window=2, subsample=0.0, train_steps=0, epochs=3, log_every=10)
  meta = executor.train(
      executor.TrainerArgs([fx.SpanlessExamples(str(tmp_path / 'examples'))],
                           str(tmp_path / 'vocabulary'),
                           str(tmp_path / 'model'), str(tmp_path / 'run')),
      config)
  # The estimate is within a step or two of the steps the epochs gave.
  assert abs(meta['learning_rate_decay_steps'] - meta['steps']) <= 2, meta
  no_decay = executor.train(
      executor.TrainerArgs([fx.SpanlessExamples(str(tmp_path / 'examples'))],
                           str(tmp_path / 'vocabulary'),
                           str(tmp_path / 'model-constant'),
                           str(tmp_path / 'run-constant')),
      config.replace(learning_rate_decay=False))
  assert no_decay['learning_rate_decay_steps'] == 0
  # The decayed run moved its rows less late in training: the tables differ.
  def table(name):
    reader = tf.train.load_checkpoint(model_layout.latest_checkpoint(
        str(tmp_path / name)))
    return reader.get_tensor(model_layout.table_key('tokens'))
  assert not np.allclose(table('model'), table('model-constant'))
