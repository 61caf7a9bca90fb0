"""The TPU embedding optimizers' update rules, applied on CPU.

The CPU adapter trains a `TPUEmbeddingForServing` whose slot variables were
created by the `tf.tpu.experimental.embedding` optimizer itself; this module
updates those parameters and slots exactly as the TPU does, so a CPU
checkpoint means what a TPU checkpoint means and either can resume the other.

Semantics (tensorflow/core/protobuf/tpu/optimization_parameters.proto, whose
reference kernels are the `ResourceSparseApply*` ops of training_ops.cc):

* gradient accumulation: the gradients of one id within a minibatch are
  summed first and the rule is applied once per distinct id;
* SGD:      w -= lr * g
* Adagrad:  a += g^2;  w -= lr * g / sqrt(a)
* Adam:     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
            w -= lr * m / sqrt(v + eps^2)   (sum_inside_sqrt)
            w -= lr * m / (sqrt(v) + eps)   (otherwise)
            No bias correction: the TPU leaves it to a dynamic learning rate.
            Lazy Adam touches only the rows in the batch; non-lazy Adam
            updates every row (g = 0 for rows not in the batch).
* FTRL:     a' = a + g^2;  p = -lr_power
            plain:     l += g - (a'^p - a^p) / lr * w
                       w = (clip(l, -l1, l1) - l) / ((a'^p + beta) / lr + 2 l2)
            multiply_linear_by_learning_rate (l stores linear * lr):
                       l += g lr - (a'^p - a^p) * w
                       w = (clip(l, -l1 lr, l1 lr) - l)
                           / (a'^p + beta + 2 l2 lr)
            a = a'.  beta / (2 lr) acts as extra l2 (proto). With
            allow_zero_accumulator a zero denominator gives w = 0.
"""

from typing import Callable, Dict, Tuple

import tensorflow as tf

from tpu_embeddings.spec import embedding_variables
from tpu_embeddings.spec.optimizer_spec import OPTIMIZER_SLOTS

PARAMETERS = embedding_variables.PARAMETERS

_UNSUPPORTED = ('clip_weight_min', 'clip_weight_max', 'weight_decay_factor',
                'clip_gradient_min', 'clip_gradient_max')


def sum_duplicates(ids: tf.Tensor, row_gradients: tf.Tensor
                  ) -> Tuple[tf.Tensor, tf.Tensor]:
  """(distinct ids, summed gradient per distinct id), like the TPU's
  accumulation."""
  unique_ids, position = tf.unique(tf.reshape(ids, [-1]))
  summed = tf.math.unsorted_segment_sum(
      tf.reshape(row_gradients, [-1, tf.shape(row_gradients)[-1]]), position,
      tf.shape(unique_ids)[0])
  return unique_ids, summed


def _learning_rate(optimizer) -> tf.Tensor:
  lr = optimizer.learning_rate
  return tf.cast(lr() if callable(lr) else lr, tf.float32)


class SparseRule:
  """Applies one embedding optimizer to (distinct ids, summed gradients)."""

  slot_names: Tuple[str, ...] = ()

  def __init__(self, optimizer):
    for name in _UNSUPPORTED:
      if getattr(optimizer, name, None) not in (None, 0, 0.0):
        raise ValueError(
            f'{type(optimizer).__name__}: {name}={getattr(optimizer, name)!r} '
            'is not supported by the CPU trainer; leave it unset')
    self.optimizer = optimizer

  def apply(self, variables: Dict[str, tf.Variable], ids: tf.Tensor,
            gradients: tf.Tensor):
    """`variables`: {'parameters': table, <slot>: slot}; ids are distinct."""
    raise NotImplementedError


class SGDRule(SparseRule):

  def apply(self, variables, ids, gradients):
    lr = _learning_rate(self.optimizer)
    variables[PARAMETERS].scatter_sub(tf.IndexedSlices(lr * gradients, ids))


class AdagradRule(SparseRule):
  slot_names = OPTIMIZER_SLOTS['adagrad']

  def apply(self, variables, ids, gradients):
    # The proto's reference kernel for Adagrad, fused (one pass over the rows):
    # accum += g^2; var -= lr * g / sqrt(accum).
    tf.raw_ops.ResourceSparseApplyAdagrad(
        var=variables[PARAMETERS].handle,
        accum=variables['accumulators'].handle,
        lr=_learning_rate(self.optimizer), grad=gradients, indices=ids,
        update_slots=True)


class AdamRule(SparseRule):
  slot_names = OPTIMIZER_SLOTS['adam']

  def _step(self, w, m, v, g):
    o = self.optimizer
    lr = _learning_rate(o)
    m = o.beta_1 * m + (1.0 - o.beta_1) * g
    v = o.beta_2 * v + (1.0 - o.beta_2) * tf.square(g)
    if o.sum_inside_sqrt:
      w = w - lr * m * tf.math.rsqrt(v + o.epsilon * o.epsilon)
    else:
      w = w - lr * m / (tf.sqrt(v) + o.epsilon)
    return w, m, v

  def apply(self, variables, ids, gradients):
    table = variables[PARAMETERS]
    momenta, velocities = variables['momenta'], variables['velocities']
    if self.optimizer.lazy_adam:
      w, m, v = self._step(tf.gather(table, ids), tf.gather(momenta, ids),
                           tf.gather(velocities, ids), gradients)
      momenta.scatter_update(tf.IndexedSlices(m, ids))
      velocities.scatter_update(tf.IndexedSlices(v, ids))
      table.scatter_update(tf.IndexedSlices(w, ids))
      return
    dense = tf.scatter_nd(ids[:, None], gradients, tf.shape(table))
    w, m, v = self._step(table, momenta, velocities, dense)
    momenta.assign(m)
    velocities.assign(v)
    table.assign(w)


class FTRLRule(SparseRule):
  slot_names = OPTIMIZER_SLOTS['ftrl']

  def apply(self, variables, ids, gradients):
    o = self.optimizer
    lr = _learning_rate(o)
    power = -o.learning_rate_power
    l1, l2, beta = (o.l1_regularization_strength,
                    o.l2_regularization_strength, o.beta)
    table = variables[PARAMETERS]
    accumulators, linears = variables['accumulators'], variables['linears']
    w = tf.gather(table, ids)
    a = tf.gather(accumulators, ids)
    l = tf.gather(linears, ids)
    new_a = a + tf.square(gradients)
    if power == 0.5:
      new_a_p, a_p = tf.sqrt(new_a), tf.sqrt(a)
    else:
      new_a_p, a_p = tf.pow(new_a, power), tf.pow(a, power)
    if o.multiply_linear_by_learning_rate:
      l = l + gradients * lr - (new_a_p - a_p) * w
      l1_limit = l1 * lr
      denominator = new_a_p + beta + 2.0 * l2 * lr
    else:
      l = l + gradients - (new_a_p - a_p) / lr * w
      l1_limit = l1
      denominator = (new_a_p + beta) / lr + 2.0 * l2
    numerator = tf.clip_by_value(l, -l1_limit, l1_limit) - l
    if o.allow_zero_accumulator:
      w = tf.math.divide_no_nan(numerator, denominator)
    else:
      w = numerator / denominator
    accumulators.scatter_update(tf.IndexedSlices(new_a, ids))
    linears.scatter_update(tf.IndexedSlices(l, ids))
    table.scatter_update(tf.IndexedSlices(w, ids))


_RULES: Dict[str, Callable[..., SparseRule]] = {
    'SGD': SGDRule,
    'Adagrad': AdagradRule,
    'Adam': AdamRule,
    'FTRL': FTRLRule,
}


def rule_for(optimizer) -> SparseRule:
  """The update rule of a `tf.tpu.experimental.embedding` optimizer object."""
  name = type(optimizer).__name__
  if name not in _RULES:
    raise ValueError(f'embedding optimizer {name} is not supported on CPU; '
                     f'use one of {sorted(_RULES)}')
  return _RULES[name](optimizer)


def apply_sparse(rule: SparseRule, variables: Dict[str, tf.Variable],
                 ids: tf.Tensor, row_gradients: tf.Tensor):
  """Sums duplicate ids' gradients, then applies the rule once per id."""
  unique_ids, summed = sum_duplicates(ids, row_gradients)
  rule.apply(variables, unique_ids, summed)


def apply_gradient(rule: SparseRule, variables: Dict[str, tf.Variable],
                   gradient, dim: int):
  """Applies a tape's gradient of one table.

  IndexedSlices (a lookup's gradient) update the rows the batch read, each
  once with its summed gradient, as on the TPU; None (the loss did not read
  the table) is the TPU's zero update: nothing for lazy optimizers, every row
  for non-lazy Adam; a dense gradient updates every row.
  """
  if gradient is None:
    ids = tf.zeros([0], tf.int32)
    rows = tf.zeros([0, dim], variables[PARAMETERS].dtype)
  elif isinstance(gradient, tf.IndexedSlices):
    ids, rows = gradient.indices, gradient.values
  else:
    ids = tf.range(tf.shape(gradient)[0])
    rows = gradient
  apply_sparse(rule, variables, ids, tf.reshape(rows, [-1, dim]))
