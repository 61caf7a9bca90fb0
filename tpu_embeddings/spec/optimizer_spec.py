"""The embedding optimizer part of the spec: kind, hyper-parameters, slots."""

import dataclasses
from typing import Any, Dict, Tuple

from tpu_embeddings.spec.checks import check_number
from tpu_embeddings.spec.checks import fail

# Hyper-parameters each optimizer accepts, with defaults (those of TF 2.15).
OPTIMIZER_PARAMS: Dict[str, Dict[str, Any]] = {
    'sgd': {'learning_rate': 0.01},
    'adagrad': {'learning_rate': 0.001, 'initial_accumulator_value': 0.1},
    'adam': {
        'learning_rate': 0.001,
        'beta_1': 0.9,
        'beta_2': 0.999,
        'epsilon': 1e-7,
        'lazy_adam': True,
        'sum_inside_sqrt': True,
    },
    'ftrl': {
        'learning_rate': 0.001,
        'learning_rate_power': -0.5,
        'l1_regularization_strength': 0.0,
        'l2_regularization_strength': 0.0,
        'beta': 0.0,
        'initial_accumulator_value': 0.1,
        'multiply_linear_by_learning_rate': False,
        'allow_zero_accumulator': False,
    },
}
# Bounds (low, high) of each numeric hyper-parameter, both included.
PARAM_BOUNDS: Dict[str, Tuple[float, float]] = {
    # Above 0; SGD on a batch-mean loss takes rates of 50-100 (word2vec's
    # 0.025 per pair times a batch of 2048 is 51), so 10,000 leaves room
    # for batches 100 times larger.
    'learning_rate': (1e-9, 1e4),
    # Adagrad / FTRL start at 0.1 (TF) or 1e-3 (here); at 1,000 the first
    # steps would already be scaled down a thousandfold.
    'initial_accumulator_value': (0.0, 1e3),
    # Adam's moment decays: 0.999999 already averages over a million steps,
    # and 1 would never forget.
    'beta_1': (0.0, 0.999999),
    'beta_2': (0.0, 0.999999),
    # Added to the denominator: above 1 it is the step size.
    'epsilon': (1e-12, 1.0),
    # FTRL: the power is <= 0 (TF's rule; -0.5 is Adagrad-like).
    'learning_rate_power': (-10.0, 0.0),
    'l1_regularization_strength': (0.0, 1e3),
    'l2_regularization_strength': (0.0, 1e3),
    'beta': (0.0, 1e3),
}

# Slot variable names per optimizer, in the order the mid-level API creates
# them.
OPTIMIZER_SLOTS: Dict[str, Tuple[str, ...]] = {
    'sgd': (),
    'adagrad': ('accumulators',),
    'adam': ('momenta', 'velocities'),
    'ftrl': ('accumulators', 'linears'),
}


@dataclasses.dataclass(frozen=True)
class OptimizerSpec:
  """The embedding optimizer: `kind` plus its hyper-parameters."""
  kind: str = 'adagrad'
  params: Tuple[Tuple[str, Any], ...] = ()

  @property
  def hyperparameters(self) -> Dict[str, Any]:
    """All hyper-parameters, defaults filled in."""
    merged = dict(OPTIMIZER_PARAMS[self.kind])
    merged.update(dict(self.params))
    return merged

  @property
  def learning_rate(self) -> float:
    return self.hyperparameters['learning_rate']

  @property
  def slot_names(self) -> Tuple[str, ...]:
    return OPTIMIZER_SLOTS[self.kind]

  def validate(self, field: str):
    if self.kind not in OPTIMIZER_PARAMS:
      fail(f'{field}.kind', f'unknown optimizer {self.kind!r}; one of '
            f'{sorted(OPTIMIZER_PARAMS)}')
    allowed = OPTIMIZER_PARAMS[self.kind]
    for key, value in self.params:
      if key not in allowed:
        fail(f'{field}.{key}', f'not a parameter of {self.kind}; one of '
              f'{sorted(allowed)}')
      if isinstance(allowed[key], bool):
        if not isinstance(value, bool):
          fail(f'{field}.{key}', f'must be true or false, got {value!r}')
      else:
        check_number(f'{field}.{key}', value, *PARAM_BOUNDS[key])

  def build(self, learning_rate_scale=None):
    """A fresh `tf.tpu.experimental.embedding` optimizer.

    `learning_rate_scale`: a scalar variable; the learning rate is then the
    mid-level API's dynamic one, `learning_rate * learning_rate_scale` read
    at every step.
    """
    import tensorflow as tf
    cls = {
        'sgd': tf.tpu.experimental.embedding.SGD,
        'adagrad': tf.tpu.experimental.embedding.Adagrad,
        'adam': tf.tpu.experimental.embedding.Adam,
        'ftrl': tf.tpu.experimental.embedding.FTRL,
    }[self.kind]
    hyperparameters = self.hyperparameters
    if learning_rate_scale is not None:
      base = hyperparameters['learning_rate']
      hyperparameters['learning_rate'] = (
          lambda: base * tf.cast(learning_rate_scale, tf.float32))
    return cls(**hyperparameters)
