"""The fused SkipGramStep op against a numpy float64 step, with shared
negatives (negatives [N, S], each B/N consecutive pairs sharing a row, their
term weighted K/S): the same loss and every parameter and optimizer slot
within 1e-6, whether the op runs a step on the calling thread alone or
shares it with the intra-op threads, and the same results at any thread
count, one step or a stack of them per call.
"""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.tpu_embeddings.training.test_fused_step import D
from tests.tpu_embeddings.training.test_fused_step import V
from tests.tpu_embeddings.training.test_fused_step import adapter
from tests.tpu_embeddings.training.test_fused_step import optimizer_of
from tpu_embeddings.kernels import library
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training import fused_step


@pytest.fixture(scope='module')
def ops():
  # Fails, saying why, where the op library cannot be built.
  return tf.load_op_library(library.build())


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
  """4096 pairs x 64 dims: work for every intra-op thread (the 64-pair cases
  run on the calling thread alone), so its blocks and row shards spread over
  them."""
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
# Two steps of 8192 pairs x 40 dims, one call each, then a stack of six
# steps of 1024 pairs x 40 in one call: each step is shared by the threads.
tables = [tf.Variable(rng.uniform(-0.5, 0.5, (40, 40)).astype(np.float32))
          for _ in range(2)]
slots = [tf.Variable(tf.fill([40, 40], 0.1)) for _ in range(2)]
for shape, rates in (((8192,), 0.5), ((8192,), 0.5),
                     ((6, 1024), np.linspace(0.5, 0.1, 6, dtype=np.float32))):
  ops.skip_gram_step(
      tables=[v.handle for v in tables], slots=[v.handle for v in slots],
      target=rng.integers(0, 40, shape).astype(np.int32),
      context=rng.integers(0, 40, shape).astype(np.int32),
      negatives=rng.integers(0, 40, shape[:-1] + (shape[-1] // 256, 8)
                             ).astype(np.int32),
      learning_rate=rates, loss_scale=1 / shape[-1], negative_weight=0.625,
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
