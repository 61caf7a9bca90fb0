"""The fused SkipGramStep op against the CPU adapter's TensorFlow step.

Both start from the same variables and train on the same batches; the op
must give the same loss and leave every parameter and optimizer slot within
1e-6 of the TensorFlow path after every step. Batches of 4096 pairs over a
small vocabulary make every row repeat and the op split the batch into
several blocks. Shared negatives (negatives [N, S], each B/N consecutive
pairs sharing a row, their term weighted K/S) are checked the same way, and
against a numpy float64 step, and for results independent of the intra-op
thread count and of whether the op splits a step over its threads.
"""

import subprocess
import sys

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
    a.variables['contexts']['parameters'].assign(
        tf.random.stateless_uniform([V, D], [3, 4], -0.5, 0.5))
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


def numpy_step(before, kind, batch, lr, scale, weight):
  """The op's step in float64: before = [table(s)..., slot(s)...], the
  output table last among the tables; returns (loss, after)."""
  tables = len(before) // 2 if kind == 'adagrad' else len(before)
  after = [np.array(v, np.float64) for v in before]
  w_in, w_out = after[0], after[tables - 1]
  target, context, negatives = (np.asarray(batch[k]) for k in
                                ('target', 'context', 'negatives'))
  n, s = negatives.shape
  t, c = w_in[target], w_out[context]
  shared = np.repeat(w_out[negatives], len(target) // n, axis=0)  # [B, S, D]
  pos = np.sum(t * c, -1)
  neg = np.einsum('bd,bsd->bs', t, shared)
  loss = scale * (np.logaddexp(0, -pos).sum() +
                  weight * np.logaddexp(0, neg).sum())
  d_pos = -scale / (1 + np.exp(pos))
  d_neg = weight * scale / (1 + np.exp(-neg))
  grads = [np.zeros_like(v) for v in after[:tables]]
  np.add.at(grads[0], target,
            d_pos[:, None] * c + np.einsum('bs,bsd->bd', d_neg, shared))
  np.add.at(grads[-1], context, d_pos[:, None] * t)
  np.add.at(grads[-1], negatives.reshape(-1), np.einsum(
      'bs,bd->bsd', d_neg, t).reshape(n, -1, s, t.shape[1]).sum(1)
            .reshape(n * s, -1))
  read = [target, context, negatives.reshape(-1)]
  touched = ([np.concatenate(read)] if tables == 1 else
             [target, np.concatenate(read[1:])])
  for i in range(tables):
    rows = np.unique(touched[i])
    g = grads[i][rows]
    if kind == 'adagrad':
      after[tables + i][rows] += g * g
      g = g / np.sqrt(after[tables + i][rows])
    after[i][rows] -= lr * g
  return loss, after


def shared_batch(rng, size, group, s):
  return {'target': tf.constant(rng.integers(0, V, size), tf.int32),
          'context': tf.constant(rng.integers(0, V, size), tf.int32),
          'negatives': tf.constant(rng.integers(0, V, (size // group, s)),
                                   tf.int32)}


@pytest.mark.parametrize('size,group,s,weight', [
    (64, 16, 8, 5 / 8),     # 4 rows of 8 negatives, each for 16 pairs
    (64, 64, 5, 0.25),      # one row for the whole batch
    (64, 1, 3, 0.5),        # a row per pair, weighted
    (4800, 1600, 8, 5 / 8),  # 3 blocks, groups over several chunks
])
@pytest.mark.parametrize('optimizer,params', [
    ('sgd', {'learning_rate': 0.7}),
    ('adagrad', {'learning_rate': 0.5, 'initial_accumulator_value': 0.05}),
])
@pytest.mark.parametrize('context_table', [False, True])
def test_shared_negatives_equal_the_numpy_step(ops, optimizer, params,
                                               context_table, size, group, s,
                                               weight):
  spec = skipgram_spec(dim=D, optimizer=optimizer, vocabulary_size=V,
                       context_table=context_table, **params)
  a = adapter(spec, size=size)
  step = fused_step.FusedSkipGramStep(ops, spec, optimizer_of(a), a.variables,
                                      size, negative_weight=weight)
  variables = step._tables + step._slots
  rng = np.random.default_rng(5)
  for _ in range(2):
    features = shared_batch(rng, size, group, s)
    before = [v.numpy() for v in variables]
    loss = float(step(features))
    want_loss, want = numpy_step(before, optimizer, features,
                                 params['learning_rate'], 1 / size, weight)
    assert loss == pytest.approx(want_loss, abs=1e-6)
    for i, (variable, expected) in enumerate(zip(variables, want)):
      np.testing.assert_allclose(variable.numpy(), expected, atol=1e-6,
                                 rtol=0, err_msg=f'variable {i}')


def test_a_step_split_over_the_threads_equals_the_numpy_step(ops):
  """4096 pairs x 64 dims: over the op's serial limit (the other cases are
  under it), so its blocks and row shards run on the worker threads."""
  rng = np.random.default_rng(11)
  dim, size, lr, weight = 64, 4096, 0.5, 5 / 8
  tables = [tf.Variable(rng.uniform(-0.5, 0.5, (V, dim)).astype(np.float32))
            for _ in range(2)]
  slots = [tf.Variable(tf.fill([V, dim], 0.1)) for _ in range(2)]
  for _ in range(2):
    batch = shared_batch(rng, size, 256, 8)
    before = [v.numpy() for v in tables + slots]
    loss = ops.skip_gram_step(
        tables=[v.handle for v in tables], slots=[v.handle for v in slots],
        target=batch['target'], context=batch['context'],
        negatives=batch['negatives'], learning_rate=lr,
        loss_scale=1 / size, negative_weight=weight, optimizer='adagrad')
    want_loss, want = numpy_step(before, 'adagrad', batch, lr, 1 / size,
                                 weight)
    assert float(loss) == pytest.approx(want_loss, abs=1e-6)
    for i, (variable, expected) in enumerate(zip(tables + slots, want)):
      np.testing.assert_allclose(variable.numpy(), expected, atol=1e-6,
                                 rtol=0, err_msg=f'variable {i}')


_THREADS_RUN = """
import sys
import numpy as np
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(int(sys.argv[2]))
ops = tf.load_op_library(sys.argv[1])
rng = np.random.default_rng(3)
# 8192 pairs x 40 dims: over the op's serial limit, so it splits each step.
tables = [tf.Variable(rng.uniform(-0.5, 0.5, (40, 40)).astype(np.float32))
          for _ in range(2)]
slots = [tf.Variable(tf.fill([40, 40], 0.1)) for _ in range(2)]
for _ in range(2):
  ops.skip_gram_step(
      tables=[v.handle for v in tables], slots=[v.handle for v in slots],
      target=rng.integers(0, 40, 8192).astype(np.int32),
      context=rng.integers(0, 40, 8192).astype(np.int32),
      negatives=rng.integers(0, 40, (32, 8)).astype(np.int32),
      learning_rate=0.5, loss_scale=1 / 8192, negative_weight=0.625,
      optimizer='adagrad')
np.savez(sys.argv[3], *[v.numpy() for v in tables + slots])
"""


def test_shared_negatives_do_not_depend_on_the_thread_count(ops, tmp_path):
  del ops  # built
  # Intra-op threads are fixed per process: one process per count, at once.
  runs = [subprocess.Popen(
      [sys.executable, '-c', _THREADS_RUN, library.build(), str(n),
       str(tmp_path / f'{n}.npz')], stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT) for n in (1, 2)]
  for run in runs:
    output = run.communicate()[0].decode()
    assert run.returncode == 0, output[-2000:]
  one, two = np.load(tmp_path / '1.npz'), np.load(tmp_path / '2.npz')
  for name in one.files:
    np.testing.assert_array_equal(one[name], two[name], err_msg=name)


def test_negatives_that_do_not_divide_the_batch_fail_with_the_shapes(ops):
  spec = skipgram_spec(dim=D, optimizer='sgd', vocabulary_size=V,
                       learning_rate=0.5)
  a = adapter(spec, size=64)
  step = fused_step.FusedSkipGramStep(ops, spec, optimizer_of(a), a.variables,
                                      64)
  features = shared_batch(np.random.default_rng(0), 64, 16, 8)
  features['negatives'] = features['negatives'][:3]  # 3 rows for 64 pairs
  before = a.variables['tokens']['parameters'].numpy()
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match=r'negatives \[N, K\] with N dividing B.*got '
                           r'\[64\], \[64\], \[3,8\]'):
    step(features)
  np.testing.assert_array_equal(a.variables['tokens']['parameters'].numpy(),
                                before)
