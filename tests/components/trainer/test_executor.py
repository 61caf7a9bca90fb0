"""EmbeddingTrainer executor: learning quality, warm start, bad inputs."""

import collections
import os
import time

import numpy as np
import pytest
import tensorflow as tf

from components.trainer import executor
from pipelines import demo_data
from tests.support import artifact_fixtures as fx
from tests.support import trainer_outputs
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training import warm_start


def _unit(table):
  return table / np.linalg.norm(table, axis=1, keepdims=True)


@pytest.mark.slow
def test_related_pairs_end_up_closer_than_random_pairs(tmp_path):
  """Metric: mean cosine of the demo corpus' ground-truth related pairs minus
  mean cosine of 2000 random token pairs; threshold 0.5 (typically ~0.8)."""
  lines = [l.split() for span in (1, 2) for l in demo_data.span_lines(span)]
  fx.write_examples(str(tmp_path / 'examples'), {'train': lines,
                                                 'eval': lines[:10]})
  counts = collections.Counter(t for line in lines for t in line)
  fx.write_vocabulary(str(tmp_path / 'vocabulary'), counts)
  model = str(tmp_path / 'model')
  spec = skipgram_spec(dim=16, optimizer='adagrad', learning_rate=0.5,
                       initial_accumulator_value=1e-3)
  meta = executor.train(
      executor.TrainerArgs([fx.SpanlessExamples(str(tmp_path / 'examples'))],
                           str(tmp_path / 'vocabulary'), model,
                           str(tmp_path / 'run')),
      executor.TrainerConfig(embedding_spec=spec.to_json(), batch_size=256,
                             train_steps=600, epochs=0, log_every=200))
  assert meta['steps'] == 600 and meta['examples_seen'] == 600 * 256
  assert meta['spans'] == []
  reader = tf.train.load_checkpoint(model_layout.latest_checkpoint(model))
  table = _unit(reader.get_tensor(model_layout.table_key('tokens')))
  ids = vocabulary_file.read(model).ids
  related = np.mean([table[ids[a]] @ table[ids[b]]
                     for a, b in demo_data.related_pairs()])
  rng = np.random.default_rng(0)
  topical = [t for t in ids if not t.startswith('x-')]
  random_pairs = [rng.choice(topical, 2, replace=False) for _ in range(2000)]
  unrelated = np.mean([table[ids[a]] @ table[ids[b]] for a, b in random_pairs])
  assert related - unrelated >= 0.5, (related, unrelated)
  # The loss fell below its starting value (1 + K) * ln 2.
  assert meta['final_loss'] < 6 * np.log(2) - 0.1
  events = tf.io.gfile.glob(str(tmp_path / 'run' / 'train' / 'events.*'))
  tags = set()
  for event in tf.compat.v1.train.summary_iterator(events[0]):
    tags.update(v.tag for v in event.summary.value)
  assert {'loss', 'examples_per_sec'} <= tags


@pytest.mark.slow
def test_warm_start_keeps_surviving_rows_bit_exact_at_step_zero(tmp_path):
  base = str(tmp_path / 'base')
  old_tokens = ['a', 'b', 'c', 'd', 'e']
  spec = skipgram_spec(dim=4, optimizer='adagrad', learning_rate=0.3,
                       initial_accumulator_value=0.25)
  rng = np.random.default_rng(1)
  base_spec = fx.write_tpu_format_model(
      base, old_tokens, spec=spec,
      table=rng.normal(size=(5, 4)).astype(np.float32))
  # Give the base non-initial slots: one CPU training run on it.
  lines = [['a', 'b', 'c'], ['d', 'e', 'a']] * 30
  fx.write_examples(str(tmp_path / 'old_examples'), {'train': lines})
  base_args = executor.TrainerArgs(
      [fx.SpanlessExamples(str(tmp_path / 'old_examples'))], base, base,
      str(tmp_path / 'base_run'))
  base_config = executor.TrainerConfig(
      embedding_spec=base_spec.to_json(), batch_size=8, train_steps=3,
      epochs=0, subsample=0.0)
  trainer_outputs.own_output(base_args, base_config)
  executor.train(base_args, base_config)
  base_reader = tf.train.load_checkpoint(model_layout.latest_checkpoint(base))

  # New vocabulary: 'b' dropped, 'x' 'y' new, survivors in a new order.
  new_lines = [['e', 'x', 'y', 'a'], ['c', 'd', 'x', 'e']] * 30
  fx.write_examples(str(tmp_path / 'examples'), {'train': new_lines})
  counts = collections.Counter(t for line in new_lines for t in line)
  new_vocab = fx.write_vocabulary(str(tmp_path / 'vocabulary'), counts)
  model = str(tmp_path / 'model')
  meta = executor.train(
      executor.TrainerArgs([fx.SpanlessExamples(str(tmp_path / 'examples'))],
                           str(tmp_path / 'vocabulary'), model,
                           str(tmp_path / 'run')),
      executor.TrainerConfig(embedding_spec=spec.to_json(), batch_size=8,
                             train_steps=2, epochs=0, warm_start_uri=base))
  assert meta['warm_start']['kept_tokens'] == 4
  assert meta['warm_start']['new_tokens'] == 2
  assert meta['warm_start']['dropped_tokens'] == 1

  step0 = tf.train.load_checkpoint(f'{model_layout.checkpoint_dir(model)}/'
                                   'ckpt-0')
  assert step0.get_tensor('step/.ATTRIBUTES/VARIABLE_VALUE') == 0
  old_ids = {t: i for i, t in enumerate(old_tokens)}
  for key in (model_layout.table_key('tokens'),
              model_layout.slot_key('tokens', 'accumulators')):
    old, new = base_reader.get_tensor(key), step0.get_tensor(key)
    assert new.shape == (len(new_vocab), 4)
    for i, token in enumerate(new_vocab.tokens):
      if token in old_ids:
        np.testing.assert_array_equal(new[i], old[old_ids[token]])
  accumulators = step0.get_tensor(model_layout.slot_key('tokens',
                                                        'accumulators'))
  table = step0.get_tensor(model_layout.table_key('tokens'))
  for token in ('x', 'y'):
    i = new_vocab.ids[token]
    np.testing.assert_array_equal(accumulators[i], 0.25)  # initial slot value
    assert np.all(np.abs(table[i]) <= 0.5 / 4)  # the table's initializer
  # The base's slots had moved, so bit-exact equality above is meaningful.
  assert np.any(base_reader.get_tensor(
      model_layout.slot_key('tokens', 'accumulators')) != 0.25)


def test_incompatible_base_model_is_a_clear_error(tmp_path):
  base = str(tmp_path / 'base')
  fx.write_tpu_format_model(base, ['a', 'b'], spec=skipgram_spec(
      dim=4, optimizer='sgd'))
  with pytest.raises(warm_start.WarmStartError, match="optimizer is 'sgd'"):
    warm_start.check_compatible(skipgram_spec(dim=4, optimizer='adagrad'),
                                skipgram_spec(dim=4, optimizer='sgd'), base)
  with pytest.raises(warm_start.WarmStartError, match='dim 4 there but 8'):
    warm_start.check_compatible(skipgram_spec(dim=8), skipgram_spec(dim=4),
                                base)


@pytest.mark.parametrize('config,message', [
    (dict(embedding_spec=skipgram_spec(vocabulary_size=9).to_json()),
     'vocabulary_size 9 but the vocabulary has 4'),
    (dict(train_steps=0, epochs=0), 'set train_steps or epochs'),
    (dict(batch_size=0), 'batch_size'),
    (dict(checkpoint_every=0, checkpoint_seconds=0), 'checkpoint_every'),
    (dict(embedding_spec='{"tables": 3}'), 'tables'),
    (dict(tpu='grpc://127.0.0.1:1'), 'cannot be reached'),
    (dict(warm_start_uri='/nonexistent/model'), 'no embedding_spec.json'),
])
def test_bad_inputs_fail_before_anything_is_written(small_inputs, tmp_path,
                                                    config, message):
  examples, vocabulary = small_inputs
  model = str(tmp_path / 'model')
  config.setdefault('embedding_spec', skipgram_spec(dim=4).to_json())
  config.setdefault('train_steps', 2)
  with pytest.raises((ValueError, RuntimeError, FileNotFoundError)) as e:
    executor.train(executor.TrainerArgs(examples, vocabulary, model,
                                        str(tmp_path / 'run')),
                   executor.TrainerConfig(**config))
  assert message in str(e.value)
  assert not os.path.exists(model)


def test_unknown_parameter_and_missing_split_are_named(small_inputs, tmp_path):
  _, vocabulary = small_inputs
  with pytest.raises(ValueError, match="unknown parameter 'windows'"):
    executor.TrainerConfig.from_exec_properties({'windows': 3})
  with pytest.raises(FileNotFoundError, match="split 'train'"):
    executor.train(
        executor.TrainerArgs([fx.SpanlessExamples(str(tmp_path))], vocabulary,
                             str(tmp_path / 'model'), str(tmp_path / 'run')),
        executor.TrainerConfig(train_steps=1))


# Shares the small inputs' tokens, so a warm start reads the damaged rows.
BASE_TOKENS = ['a', 'b', 'c', 'd'] + [f't{i}' for i in range(200)]


def _flip_checkpoint(model):
  checkpoint = model_layout.latest_checkpoint(model)
  data = tf.io.gfile.glob(checkpoint + '.data-*')
  assert len(data) == 1
  with open(data[0], 'r+b') as f:
    raw = bytearray(f.read())
    for i in range(len(raw) // 2, len(raw) // 2 + 32):
      raw[i] ^= 0xFF
    f.seek(0)
    f.write(raw)
  return checkpoint


def test_damaged_explicit_base_fails_in_one_line_before_writing(
    small_inputs, tmp_path):
  examples, vocabulary = small_inputs
  base = str(tmp_path / 'base')
  fx.write_tpu_format_model(base, BASE_TOKENS,
                            spec=skipgram_spec(dim=4))
  checkpoint = _flip_checkpoint(base)
  model = str(tmp_path / 'model')
  with pytest.raises(warm_start.WarmStartError) as e:
    executor.train(executor.TrainerArgs(examples, vocabulary, model,
                                        str(tmp_path / 'run')),
                   executor.TrainerConfig(
                       embedding_spec=skipgram_spec(dim=4).to_json(),
                       train_steps=2, epochs=0, warm_start_uri=base))
  message = str(e.value)
  assert '\n' not in message
  assert message.startswith(f'warm start from {base}: checkpoint {checkpoint} '
                            'cannot be read (')
  assert checkpoint + '.data-00000-of-00001' in message
  assert '--set trainer.warm_start_uri=' in message and 'rollback' in message
  assert not os.path.exists(model)


@pytest.mark.slow
def test_damaged_pushed_base_is_a_cold_start_with_a_warning(small_inputs,
                                                           tmp_path):
  from tests.support import pusher_exports
  from tpu_embeddings.push_root import publish
  examples, vocabulary = small_inputs
  base = str(tmp_path / 'base')
  fx.write_tpu_format_model(base, BASE_TOKENS,
                            spec=skipgram_spec(dim=4))
  root = str(tmp_path / 'pushed')
  publish.publish(root, {
      'serving': pusher_exports.write_serving_model(str(tmp_path / 's'), 1.0),
      'hub': pusher_exports.write_hub_module(str(tmp_path / 'h'), 1.0)},
                  {'source_model': base})
  _flip_checkpoint(base)
  meta = executor.train(executor.TrainerArgs(examples, vocabulary,
                                             str(tmp_path / 'model'),
                                             str(tmp_path / 'run'),
                                             push_root=root),
                        executor.TrainerConfig(
                            embedding_spec=skipgram_spec(dim=4).to_json(),
                            train_steps=2, epochs=0))
  assert meta['warm_start'] is None and meta['steps'] == 2
  skipped = meta['warm_start_skipped']
  assert len(skipped) == 2 and skipped[0].startswith(
      f'pushed version 1 skipped: warm start from {base}: checkpoint ')
  assert skipped[1] == 'no pushed version can seed this model; cold start'


def _one_token_inputs(tmp_path, train_lines, eval_lines):
  fx.write_examples(str(tmp_path / 'examples'), {'train': train_lines,
                                                 'eval': eval_lines})
  fx.write_vocabulary(str(tmp_path / 'vocabulary'), {'tok': sum(
      len(l) for l in train_lines + eval_lines)})
  return ([fx.SpanlessExamples(str(tmp_path / 'examples'))],
          str(tmp_path / 'vocabulary'))


@pytest.mark.slow
@pytest.mark.parametrize('train_length,eval_length,split', [
    (50, 2, 'eval'), (2, 50, 'train')])
def test_a_split_without_skipgram_pairs_fails_before_training(
    tmp_path, train_length, eval_length, split):
  """One repeated token: subsampling keeps ~3% of it, so two-token sequences
  give no pairs; found before the first step, not by the validator."""
  examples, vocabulary = _one_token_inputs(
      tmp_path, [['tok'] * train_length] * 300, [['tok'] * eval_length] * 20)
  model = str(tmp_path / 'model')
  start = time.monotonic()
  with pytest.raises(ValueError,
                     match=f"split '{split}' gives no skip-gram pairs"):
    executor.train(executor.TrainerArgs(examples, vocabulary, model,
                                        str(tmp_path / 'run')),
                   executor.TrainerConfig(
                       embedding_spec=skipgram_spec(dim=4).to_json(),
                       batch_size=64, train_steps=300))
  assert time.monotonic() - start < 30
  assert not os.path.exists(model)
