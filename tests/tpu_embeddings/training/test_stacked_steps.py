"""Stacked steps: S batches in one call of the fused op, against S calls.

The stacked call must leave every table and slot exactly as S single steps
at the same learning rates do (bit for bit: the same arithmetic in the same
order), give each step's loss, and refuse inputs it cannot step through.
The training loop's stacks must start and end where its calls do.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.tpu_embeddings.training.test_fused_step import SHARED
from tests.tpu_embeddings.training.test_fused_step import V
from tests.tpu_embeddings.training.test_fused_step import adapter
from tests.tpu_embeddings.training.test_fused_step import batches
from tests.tpu_embeddings.training.test_fused_step import optimizer_of
from tpu_embeddings.kernels import library
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training import cpu_adapter
from tpu_embeddings.training import fused_step
from tpu_embeddings.training import stacked_steps
from tpu_embeddings.training import training_loop
from tpu_embeddings.training.config import LoopConfig
from tpu_embeddings.training.learning_rate import LinearDecay

B = 4096
SCALES = [1.0, 0.5, 0.25, 0.125]


@pytest.fixture(scope='module')
def ops():
  return tf.load_op_library(library.build())


def stacked(features):
  return {name: tf.stack([f[name] for f in features]) for name in features[0]}


def assert_same_variables(a, b):
  for table, variables in a.variables.items():
    for name, variable in variables.items():
      np.testing.assert_array_equal(b.variables[table][name].numpy(),
                                    variable.numpy(), err_msg=f'{table}/{name}')


@pytest.mark.parametrize('optimizer,params', [
    ('sgd', {'learning_rate': 0.7}),
    ('adagrad', {'learning_rate': 0.5, 'initial_accumulator_value': 0.05}),
])
@pytest.mark.parametrize('context_table', [False, True])
@pytest.mark.parametrize('settings', [None, SHARED], ids=['per-pair', 'shared'])
# 4096 x 12 and 4096 x 64 are 3 and 16 threads' work (skipgram_step.cc): the
# stack's steps go through the intra-op threads in lockstep.
@pytest.mark.parametrize('dim', [12, 64])
def test_a_stack_equals_its_steps_one_by_one(ops, optimizer, params,
                                             context_table, settings, dim):
  spec = skipgram_spec(dim=dim, optimizer=optimizer, vocabulary_size=V,
                       context_table=context_table, **params)
  weight = settings.negative_weight if settings else 1.0
  one, many = adapter(spec, settings=settings), adapter(spec, settings=settings)
  single = fused_step.FusedSkipGramStep(ops, spec, optimizer_of(one),
                                        one.variables, B, weight)
  stack = fused_step.FusedSkipGramStep(ops, spec, optimizer_of(many),
                                       many.variables, B, weight)
  features = list(batches(settings=settings))
  want = []
  for scale, f in zip(SCALES, features):
    one.learning_rate_scale.assign(scale)
    want.append(float(single(f)))
  got = stack.stacked(stacked(features), tf.constant(SCALES))
  np.testing.assert_array_equal(got.numpy(), np.float32(want))
  assert_same_variables(one, many)


def test_a_stack_needs_a_rate_per_step(ops):
  spec = skipgram_spec(dim=12, optimizer='sgd', vocabulary_size=V)
  a = adapter(spec, size=8)
  step = fused_step.FusedSkipGramStep(ops, spec, optimizer_of(a), a.variables,
                                      8)
  features = stacked(list(batches(size=8)))
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'learning_rate must be a scalar, or \[S\]'):
    step.stacked(features, tf.constant(SCALES[:2]))
  features['negatives'] = features['negatives'][:2]
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='same with a leading'):
    step.stacked(features, tf.constant(SCALES))


def test_the_adapter_trains_stacks_as_it_trains_steps():
  spec = skipgram_spec(dim=12, optimizer='adagrad', vocabulary_size=V,
                       learning_rate=0.5)
  features = list(batches(settings=SHARED)) * 3  # 12 steps
  data = tf.data.Dataset.from_tensor_slices(stacked(features)).map(
      lambda f: (f, {}))
  trained = []
  for stack in (1, 4):
    tf.random.set_seed(7)
    a = cpu_adapter.for_skipgram(spec, B, decay=LinearDecay(12),
                                 settings=SHARED)
    a.build()
    assert a.most_steps_per_call == cpu_adapter.MOST_STEPS_PER_CALL
    iterator = a.iterator(lambda _: data, stack)
    train = a.train_stacked if stack > 1 else a.train
    # Calls of 8 steps, then what is left of the data (4 of 8).
    losses = [train(iterator, 8, 0), train(iterator, 8, 8)]
    assert [len(x) for x in losses] == [8, 4]
    trained.append((a, np.concatenate(losses)))
  (one, want), (many, got) = trained
  np.testing.assert_array_equal(got, want)
  assert_same_variables(one, many)
  assert float(many.learning_rate_scale) == float(one.learning_rate_scale)


def test_stacks_run_in_order_at_each_steps_scale_until_the_data_ends():
  stacks = tf.data.Dataset.range(1, 9).map(
      lambda x: tf.cast(x, tf.float32)).batch(4)
  scale = tf.Variable(1.0)
  train = training_loop.CompiledSteps(
      lambda batches, scales: batches + scales, scale,
      lambda step: tf.cast(step, tf.float32) / 100.0, stacked=True)
  iterator = iter(stacks)
  np.testing.assert_allclose(train(iterator, 8, first_step=20),
                             np.arange(1, 9) + np.arange(20, 28) / 100.0)
  assert float(scale) == pytest.approx(0.27)  # the last step's, as one by one
  # The data ended on the call's boundary: the next call runs nothing.
  assert train(iterator, 8, first_step=28).shape == (0,)


@pytest.mark.parametrize('settings,start,most,want', [
    # log_every 100: stacks of 10 end on every progress line.
    ({}, 0, 16, 10),
    ({'log_every': 96}, 0, 16, 16),
    ({'log_every': 100, 'checkpoint_every': 64, 'train_steps': 1000}, 0, 16,
     4),
    # A run resumed at step 300 keeps its stacks on the same boundaries; one
    # resumed at 13 steps one batch per call.
    ({}, 300, 16, 10),
    ({}, 13, 16, 1),
    # An adapter without stacks.
    ({}, 0, 1, 1),
])
def test_stacks_end_where_the_loops_calls_do(settings, start, most, want):
  config = LoopConfig(**settings)
  assert stacked_steps.steps_per_call(config, start, most) == want
