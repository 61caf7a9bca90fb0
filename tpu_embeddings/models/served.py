"""A model's signatures as `eval_fn` calls them: `serve[name](**inputs)`.

The validator scores a candidate through the signatures it will serve
(in-process, before export) and the pushed baseline through its loaded
SavedModel's signatures; both are wrapped alike: keyword inputs of numpy
arrays (raw features: a bag's tokens joined by spaces), {output: ndarray}
out, in batches. `Served` holds them, and what else the validator knows of
the model behind them: its role, its spec, and the rows of its tables.
"""

import inspect
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf

BATCH = 4096


class Signature:
  """One signature, called with numpy arrays and answering numpy arrays."""

  def __init__(self, call: Callable[..., Mapping[str, tf.Tensor]],
               inputs: Mapping[str, tf.TensorSpec], name: str = ''):
    self._call = call
    self.specs = dict(inputs)
    self.name = name

  @property
  def inputs(self) -> Tuple[str, ...]:
    return tuple(self.specs)

  def __call__(self, **inputs) -> Dict[str, np.ndarray]:
    missing = sorted(set(self.specs) - set(inputs))
    if missing:
      raise ValueError(f'signature {self.name!r} needs inputs {missing}')
    n = len(next(iter(inputs.values()))) if inputs else 0
    parts: Dict[str, List[np.ndarray]] = {}
    for start in range(0, max(n, 1), BATCH):
      batch = {k: tf.constant(np.asarray(inputs[k])[start:start + BATCH],
                              self.specs[k].dtype) for k in self.specs}
      out = self._call(**batch)
      if not isinstance(out, Mapping):
        out = {'output_0': out}
      for key, value in out.items():
        parts.setdefault(key, []).append(np.asarray(value))
    return {k: np.concatenate(v, axis=0) for k, v in parts.items()}


# The models a validation scores.
CANDIDATE = 'candidate'
BASELINE = 'baseline'
UNTRAINED = 'untrained'


class Served(dict):
  """A model's signatures by name (what `eval_fn` has always taken), and
  what the validator knows of the model beside them.

  Attributes:
    role: CANDIDATE, BASELINE or UNTRAINED.
    label: the model as messages name it (e.g. 'baseline version 3').
    spec: the model's EmbeddingSpec, or None when unknown (a pushed version
      whose source Model cannot be read).
    not_comparable: {metric: why} an `eval_fn` fills when a metric of this
      model cannot be compared with the candidate's (e.g. scored otherwise).
    cache: what an evaluation keeps of this model for the report's details.
  """

  def __init__(self, signatures: Mapping[str, Signature], role: str,
               spec: Any = None,
               rows: Optional[Callable[[str], Optional[np.ndarray]]] = None,
               label: str = ''):
    super().__init__(signatures)
    self.role = role
    self.label = label or role
    self.spec = spec
    self._rows = rows
    self._tables: Dict[str, Optional[np.ndarray]] = {}
    self.not_comparable: Dict[str, str] = {}
    self.cache: Dict[str, Any] = {}

  def rows(self, table: str) -> Optional[np.ndarray]:
    """[rows, dim] of table `table`, row i the i-th token of the table's
    vocabulary in `ctx` (zeros for tokens the model does not know); None
    when the model does not serve them. Read once; treat as read-only."""
    if table not in self._tables:
      self._tables[table] = self._rows(table) if self._rows else None
    return self._tables[table]


def function_inputs(function) -> List[Tuple[str, tf.TensorSpec]]:
  """(argument name, TensorSpec) of a tf.function with an input_signature."""
  specs = getattr(function, 'input_signature', None)
  if specs is None:
    raise ValueError('a signature must be a tf.function with an '
                     'input_signature, e.g. [tf.TensorSpec([None], '
                     'tf.string)] per raw feature')
  names = [p for p in inspect.signature(
      function.python_function).parameters if p != 'self']
  where = f'signature {function.python_function.__name__}'
  if len(names) != len(specs):
    raise ValueError(f'{where}: {len(names)} arguments but {len(specs)} '
                     'specs')
  for name, spec in zip(names, specs):
    if spec.name and spec.name != name:
      raise ValueError(f'{where}: the TensorSpec of argument {name!r} is '
                       f'named {spec.name!r}; a saved signature names its '
                       'inputs by them, so leave it unnamed or name it alike')
  return list(zip(names, specs))


def from_functions(functions: Mapping[str, Callable]) -> Dict[str, Signature]:
  """The in-process tf.functions of a serving model, by name."""
  return {name: Signature(fn, dict(function_inputs(fn)), name)
          for name, fn in functions.items()}


def from_loaded(loaded) -> Dict[str, Signature]:
  """The signatures of a `tf.saved_model.load`-ed SavedModel, by name."""
  return {name: Signature(fn, fn.structured_input_signature[1], name)
          for name, fn in loaded.signatures.items()}


def vectors(outputs: Mapping[str, np.ndarray], key: str = '') -> np.ndarray:
  """The output `key`, or the only output of a signature."""
  if key:
    return outputs[key]
  if len(outputs) != 1:
    raise ValueError(f'the signature answers {sorted(outputs)}; name the '
                     'output to use')
  return next(iter(outputs.values()))
