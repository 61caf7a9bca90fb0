"""The fused SkipGramStep op against the CPU adapter's TensorFlow step.

Both start from the same variables and train on the same batches; the op
must give the same loss and leave every parameter and optimizer slot within
1e-6 of the TensorFlow path after every step. Batches of 4096 pairs over a
small vocabulary make every row repeat and the op split the batch into
several blocks. Shared negatives (negatives [N, S], each B/N consecutive
pairs sharing a row, their term weighted K/S) are checked the same way here,
and against a numpy float64 step in test_fused_step_numpy.py.
"""


import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.kernels import library
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training import cpu_adapter
from tpu_embeddings.training import fused_step

V, D, B, K = 40, 12, 4096, 3
STEPS = 4
# 16 groups of 256 pairs, each sharing 8 negatives weighted K/8.
SHARED = SkipGramConfig(batch_size=B, negatives=K, shared_negatives=8,
                        negative_group=256)


@pytest.fixture(scope='module')
def ops():
  # Fails, saying why, where the op library cannot be built.
  return tf.load_op_library(library.build())


def batches(seed=0, vocabulary=V, size=B, settings=None):
  rng = np.random.default_rng(seed)
  negatives = ((settings.negative_groups, settings.negatives_per_row)
               if settings else (size, K))
  for _ in range(STEPS):
    yield {'target': tf.constant(rng.integers(0, vocabulary, size), tf.int32),
           'context': tf.constant(rng.integers(0, vocabulary, size), tf.int32),
           'negatives': tf.constant(rng.integers(0, vocabulary, negatives),
                                    tf.int32)}


def adapter(spec, size=B, settings=None):
  tf.random.set_seed(7)
  a = cpu_adapter.for_skipgram(spec, size, fused=False, settings=settings)
  a.build()
  if 'contexts' in a.variables:  # zero-initialized: give it values to learn
    contexts = a.variables['contexts']['parameters']
    contexts.assign(tf.random.stateless_uniform(contexts.shape, [3, 4], -0.5,
                                                0.5))
  return a


def optimizer_of(a):
  return a._rules['tokens'].optimizer


@pytest.mark.parametrize('optimizer,params', [
    ('sgd', {'learning_rate': 0.7}),
    ('adagrad', {'learning_rate': 0.5, 'initial_accumulator_value': 0.05}),
])
@pytest.mark.parametrize('context_table', [False, True])
@pytest.mark.parametrize('settings', [None, SHARED], ids=['per-pair', 'shared'])
def test_fused_step_equals_the_tensorflow_step(ops, optimizer, params,
                                               context_table, settings):
  spec = skipgram_spec(dim=D, optimizer=optimizer, vocabulary_size=V,
                       context_table=context_table, **params)
  reference, fused = adapter(spec, settings=settings), adapter(spec)
  step = fused_step.FusedSkipGramStep(
      ops, spec, optimizer_of(fused), fused.variables, B,
      negative_weight=settings.negative_weight if settings else 1.0)
  for features in batches(settings=settings):
    want, got = float(reference.step((features, {}))), float(step(features))
    assert got == pytest.approx(want, abs=1e-6)
    for table, variables in reference.variables.items():
      for name, variable in variables.items():
        np.testing.assert_allclose(fused.variables[table][name].numpy(),
                                   variable.numpy(), atol=1e-6, rtol=0,
                                   err_msg=f'{table}/{name}')


def test_fused_step_follows_the_learning_rate_scale(ops):
  spec = skipgram_spec(dim=D, optimizer='sgd', vocabulary_size=V,
                       learning_rate=0.5)
  reference, fused = adapter(spec), adapter(spec)
  step = fused_step.FusedSkipGramStep(ops, spec, optimizer_of(fused),
                                      fused.variables, B)
  # The training loop sets the scale before each step (linear decay).
  reference.learning_rate_scale.assign(0.25)
  fused.learning_rate_scale.assign(0.25)
  features = next(batches(seed=1))
  reference.step((features, {}))
  tf.function(step)(features)
  np.testing.assert_allclose(fused.variables['tokens']['parameters'].numpy(),
                             reference.variables['tokens']['parameters']
                             .numpy(), atol=1e-6, rtol=0)


def test_an_id_outside_the_table_names_the_feature(ops):
  spec = skipgram_spec(dim=D, optimizer='sgd', vocabulary_size=V,
                       learning_rate=0.5)
  a = adapter(spec, size=8)
  step = fused_step.FusedSkipGramStep(ops, spec, optimizer_of(a), a.variables,
                                      8)
  features = next(batches(size=8))
  features['negatives'] = tf.tensor_scatter_nd_update(
      features['negatives'], [[2, 1]], [V])
  before = a.variables['tokens']['parameters'].numpy()
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=f'negatives id {V} at position 7 is outside'):
    step(features)
  # Nothing was written.
  np.testing.assert_array_equal(a.variables['tokens']['parameters'].numpy(),
                                before)


def test_other_optimizers_keep_the_tensorflow_step():
  spec = skipgram_spec(dim=D, optimizer='adam', vocabulary_size=V)
  a = adapter(spec, size=8)
  assert fused_step.for_adapter(spec, optimizer_of(a), a.variables, 8) is None
  assert 'Adam' in fused_step.unsupported(spec, optimizer_of(a))


def test_switched_off_ops_keep_the_tensorflow_step(monkeypatch):
  monkeypatch.setenv(library.SWITCH, '0')
  library.status.cache_clear()
  try:
    spec = skipgram_spec(dim=D, optimizer='sgd', vocabulary_size=V)
    a = adapter(spec, size=8)
    assert fused_step.for_adapter(spec, optimizer_of(a), a.variables,
                                  8) is None
  finally:
    library.status.cache_clear()


@pytest.mark.parametrize('settings', [None, SHARED], ids=['per-pair', 'shared'])
def test_the_cpu_adapter_trains_skipgram_with_the_fused_op(ops, settings):
  del ops  # built: the adapter loads the same library
  spec = skipgram_spec(dim=D, optimizer='adagrad', vocabulary_size=V,
                       context_table=True, learning_rate=0.5)
  reference = adapter(spec, settings=settings)
  tf.random.set_seed(7)
  trained = cpu_adapter.for_skipgram(spec, B, settings=settings)
  trained.build()
  trained.variables['contexts']['parameters'].assign(
      reference.variables['contexts']['parameters'])
  assert trained._fused is not None
  for features in batches(settings=settings):
    want = float(reference.step((features, {})))
    assert float(trained.step((features, {}))) == pytest.approx(want,
                                                                 abs=1e-5)
  for table, variables in reference.variables.items():
    for name, variable in variables.items():
      np.testing.assert_allclose(trained.variables[table][name].numpy(),
                                 variable.numpy(), atol=1e-5, rtol=0,
                                 err_msg=f'{table}/{name}')
