"""CPU updates vs NumPy references of the TPU embedding optimizers' formulas."""

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec import embedding_variables
from tpu_embeddings.training import embedding_optimizers as eo

V, D = 7, 3
# Ids with duplicates (2 three times, 5 twice); row 0 and 6 are never touched.
IDS = np.array([2, 5, 2, 1, 2, 5, 3], dtype=np.int32)


def summed(ids, grads):
  out = {}
  for i, g in zip(ids, grads):
    out[int(i)] = out.get(int(i), 0) + g.astype(np.float64)
  return out


def np_sgd(state, g_by_id, hp):
  w = state['parameters']
  for i, g in g_by_id.items():
    w[i] -= hp['learning_rate'] * g


def np_adagrad(state, g_by_id, hp):
  w, a = state['parameters'], state['accumulators']
  for i, g in g_by_id.items():
    a[i] += g * g
    w[i] -= hp['learning_rate'] * g / np.sqrt(a[i])


def np_adam(state, g_by_id, hp):
  w, m, v = state['parameters'], state['momenta'], state['velocities']
  b1, b2, eps, lr = hp['beta_1'], hp['beta_2'], hp['epsilon'], hp[
      'learning_rate']
  rows = range(V) if not hp['lazy_adam'] else g_by_id
  for i in rows:
    g = g_by_id.get(i, np.zeros(D))
    m[i] = b1 * m[i] + (1 - b1) * g
    v[i] = b2 * v[i] + (1 - b2) * g * g
    if hp['sum_inside_sqrt']:
      w[i] -= lr * m[i] / np.sqrt(v[i] + eps * eps)
    else:
      w[i] -= lr * m[i] / (np.sqrt(v[i]) + eps)


def np_ftrl(state, g_by_id, hp):
  w, a, l = state['parameters'], state['accumulators'], state['linears']
  lr, p = hp['learning_rate'], -hp['learning_rate_power']
  l1, l2, beta = (hp['l1_regularization_strength'],
                  hp['l2_regularization_strength'], hp['beta'])
  for i, g in g_by_id.items():
    new_a = a[i] + g * g
    if hp['multiply_linear_by_learning_rate']:
      l[i] += g * lr - (new_a**p - a[i]**p) * w[i]
      limit, y = l1 * lr, new_a**p + beta + 2 * l2 * lr
    else:
      l[i] += g - (new_a**p - a[i]**p) / lr * w[i]
      limit, y = l1, (new_a**p + beta) / lr + 2 * l2
    w[i] = (np.clip(l[i], -limit, limit) - l[i]) / y
    a[i] = new_a


REFERENCES = {'sgd': np_sgd, 'adagrad': np_adagrad, 'adam': np_adam,
              'ftrl': np_ftrl}
CASES = [
    ('sgd', {'learning_rate': 0.3}),
    ('adagrad', {'learning_rate': 0.2, 'initial_accumulator_value': 0.05}),
    ('adam', {'learning_rate': 0.1}),
    ('adam', {'learning_rate': 0.1, 'lazy_adam': False,
              'sum_inside_sqrt': False, 'epsilon': 1e-3}),
    ('ftrl', {'learning_rate': 0.5, 'l1_regularization_strength': 0.01,
              'l2_regularization_strength': 0.02, 'beta': 0.1}),
    ('ftrl', {'learning_rate': 0.5, 'learning_rate_power': -0.7,
              'l1_regularization_strength': 0.01,
              'multiply_linear_by_learning_rate': True, 'beta': 0.3}),
]


def serving_embedding(kind, params):
  spec = skipgram_spec(dim=D, optimizer=kind, vocabulary_size=V,
                       initializer='truncated_normal', **params)
  tf.random.set_seed(3)
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  optimizer = embedding._table_config[0].optimizer
  variables = embedding_variables.table_variables(embedding)
  return spec, variables['tokens'], optimizer


@pytest.mark.parametrize('kind,params', CASES)
def test_cpu_update_matches_numpy_formula(kind, params):
  spec, variables, optimizer = serving_embedding(kind, params)
  hp = spec.optimizer.hyperparameters
  rule = eo.rule_for(optimizer)
  assert set(variables) == {'parameters', *spec.optimizer.slot_names}
  state = {k: v.numpy().astype(np.float64) for k, v in variables.items()}
  rng = np.random.default_rng(0)
  apply = tf.function(lambda i, g: eo.apply_sparse(rule, variables, i, g))
  for _ in range(3):  # slots move away from their initial values
    grads = rng.normal(size=(len(IDS), D)).astype(np.float32)
    apply(tf.constant(IDS), tf.constant(grads))
    REFERENCES[kind](state, summed(IDS, grads), hp)
  for name, var in variables.items():
    np.testing.assert_allclose(var.numpy(), state[name], rtol=2e-5,
                               atol=2e-6, err_msg=f'{kind} {name}')
  untouched = [i for i in range(V) if i not in IDS]
  if kind != 'adam' or hp['lazy_adam']:
    _, fresh, _ = serving_embedding(kind, params)
    for name, var in variables.items():
      np.testing.assert_array_equal(var.numpy()[untouched],
                                    fresh[name].numpy()[untouched])


def test_duplicates_are_summed_before_the_update():
  # Adagrad on (g, g) for one id differs from two single updates: the TPU
  # accumulates first, and so must the CPU rule.
  _, variables, optimizer = serving_embedding('adagrad', {
      'learning_rate': 1.0, 'initial_accumulator_value': 0.1})
  before = variables['parameters'].numpy()[4].copy()
  g = np.ones((2, D), np.float32)
  eo.apply_sparse(eo.rule_for(optimizer), variables, tf.constant([4, 4]),
                  tf.constant(g))
  acc = 0.1 + 4.0
  np.testing.assert_allclose(variables['accumulators'].numpy()[4], acc)
  np.testing.assert_allclose(variables['parameters'].numpy()[4],
                             before - 2.0 / np.sqrt(acc), rtol=1e-6)


def test_numpy_references_agree_with_the_proto_reference_kernels():
  """The proto points each optimizer at a training_ops.cc kernel."""
  rng = np.random.default_rng(1)
  ids = np.array([0, 3, 5], np.int32)
  g = rng.normal(size=(3, D)).astype(np.float32)
  w0 = rng.normal(size=(V, D)).astype(np.float32)
  a0 = rng.uniform(0.1, 1.0, size=(V, D)).astype(np.float32)
  l0 = rng.normal(size=(V, D)).astype(np.float32)

  # Adagrad: ResourceSparseApplyAdagrad.
  w, a = tf.Variable(w0), tf.Variable(a0)
  tf.raw_ops.ResourceSparseApplyAdagrad(var=w.handle, accum=a.handle, lr=0.3,
                                        grad=g, indices=ids)
  state = {'parameters': w0.astype(np.float64), 'accumulators':
           a0.astype(np.float64)}
  np_adagrad(state, dict(zip(ids.tolist(), g)), {'learning_rate': 0.3})
  np.testing.assert_allclose(w.numpy(), state['parameters'], rtol=1e-5)

  # FTRL (beta = 0): ResourceSparseApplyFtrl, both linear conventions.
  for multiply in (False, True):
    w, a, l = tf.Variable(w0), tf.Variable(a0), tf.Variable(l0)
    tf.raw_ops.ResourceSparseApplyFtrl(
        var=w.handle, accum=a.handle, linear=l.handle, grad=g, indices=ids,
        lr=0.4, l1=0.05, l2=0.1, lr_power=-0.5,
        multiply_linear_by_lr=multiply)
    state = {'parameters': w0.astype(np.float64),
             'accumulators': a0.astype(np.float64),
             'linears': l0.astype(np.float64)}
    np_ftrl(state, dict(zip(ids.tolist(), g)), {
        'learning_rate': 0.4, 'learning_rate_power': -0.5,
        'l1_regularization_strength': 0.05,
        'l2_regularization_strength': 0.1, 'beta': 0.0,
        'multiply_linear_by_learning_rate': multiply})
    np.testing.assert_allclose(w.numpy(), state['parameters'], rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(l.numpy(), state['linears'], rtol=1e-4,
                               atol=1e-6)

  # Adam without bias correction (beta powers 0) and eps outside the sqrt:
  # ResourceApplyAdam on the dense gradient = non-lazy Adam.
  dense = np.zeros((V, D), np.float32)
  dense[ids] = g
  w, m, v = tf.Variable(w0), tf.Variable(l0), tf.Variable(a0)
  tf.raw_ops.ResourceApplyAdam(var=w.handle, m=m.handle, v=v.handle,
                               beta1_power=0.0, beta2_power=0.0, lr=0.1,
                               beta1=0.9, beta2=0.99, epsilon=1e-3,
                               grad=dense)
  state = {'parameters': w0.astype(np.float64), 'momenta':
           l0.astype(np.float64), 'velocities': a0.astype(np.float64)}
  np_adam(state, dict(zip(ids.tolist(), g)), {
      'learning_rate': 0.1, 'beta_1': 0.9, 'beta_2': 0.99, 'epsilon': 1e-3,
      'lazy_adam': False, 'sum_inside_sqrt': False})
  np.testing.assert_allclose(w.numpy(), state['parameters'], rtol=1e-5,
                             atol=1e-6)


def test_unsupported_options_are_refused():
  with pytest.raises(ValueError, match='clip_weight_max'):
    eo.rule_for(tf.tpu.experimental.embedding.SGD(0.1, clip_weight_max=1.0))
  with pytest.raises(ValueError, match='AdagradMomentum'):
    eo.rule_for(tf.tpu.experimental.embedding.AdagradMomentum(0.1))
