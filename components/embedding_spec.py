"""The embedding spec: the single description of tables, features and optimizer.

Every component rebuilds the `tf.tpu.experimental.embedding` config objects from
this spec (saved as `embedding_spec.json` next to every checkpoint and model);
nothing re-derives them by hand. `build_*` methods return fresh objects on every
call because the mid-level API mutates the configs it is given.
"""

import dataclasses
import json
import math
from typing import Any, Dict, List, Optional, Tuple

SPEC_FILENAME = 'embedding_spec.json'
FORMAT_VERSION = 1

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
# Slot variable names per optimizer, in the order the mid-level API creates them.
OPTIMIZER_SLOTS: Dict[str, Tuple[str, ...]] = {
    'sgd': (),
    'adagrad': ('accumulators',),
    'adam': ('momenta', 'velocities'),
    'ftrl': ('accumulators', 'linears'),
}
INITIALIZERS = ('truncated_normal', 'uniform', 'zeros')
COMBINERS = ('mean', 'sum', 'sqrtn')


class SpecError(ValueError):
  """A bad value in an embedding spec; the message names the field."""


def _fail(field: str, message: str):
  raise SpecError(f'embedding spec: {field}: {message}')


def _check_name(field: str, value: Any):
  if not isinstance(value, str) or not value:
    _fail(field, f'must be a non-empty string, got {value!r}')
  if '/' in value or value.startswith('.'):
    _fail(field, f'{value!r} may not contain "/" or start with "."')


def _check_int(field: str, value: Any, minimum: int):
  if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
    _fail(field, f'must be an integer >= {minimum}, got {value!r}')


def _check_number(field: str, value: Any):
  if (isinstance(value, bool) or not isinstance(value, (int, float)) or
      not math.isfinite(value)):
    _fail(field, f'must be a finite number, got {value!r}')


@dataclasses.dataclass(frozen=True)
class TableSpec:
  """One embedding table. `vocabulary_size` 0 means "set from the vocabulary"."""
  name: str
  dim: int
  vocabulary_size: int = 0
  initializer: str = 'uniform'
  # truncated_normal: stddev (default 1/sqrt(dim)); uniform: half-width
  # (default 0.5/dim, word2vec's choice).
  initializer_scale: Optional[float] = None
  combiner: str = 'mean'

  def validate(self, field: str):
    _check_name(f'{field}.name', self.name)
    _check_int(f'{field}.dim', self.dim, 1)
    _check_int(f'{field}.vocabulary_size', self.vocabulary_size, 0)
    if self.initializer not in INITIALIZERS:
      _fail(f'{field}.initializer',
            f'unknown initializer {self.initializer!r}; one of {INITIALIZERS}')
    if self.initializer_scale is not None:
      _check_number(f'{field}.initializer_scale', self.initializer_scale)
      if self.initializer_scale <= 0:
        _fail(f'{field}.initializer_scale',
              f'must be > 0, got {self.initializer_scale!r}')
    if self.combiner not in COMBINERS:
      _fail(f'{field}.combiner',
            f'unknown combiner {self.combiner!r}; one of {COMBINERS}')

  def build_initializer(self):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if self.initializer == 'zeros':
      return tf.zeros_initializer()
    if self.initializer == 'truncated_normal':
      scale = self.initializer_scale or 1.0 / math.sqrt(self.dim)
      # The mid-level API's own default initializer class (TF core, not Keras).
      from tensorflow.python.ops import init_ops_v2  # pylint: disable=g-import-not-at-top
      return init_ops_v2.TruncatedNormal(mean=0.0, stddev=scale)
    scale = self.initializer_scale or 0.5 / self.dim
    return tf.random_uniform_initializer(minval=-scale, maxval=scale)


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
  """One input feature looked up in `table`."""
  name: str
  table: str
  max_sequence_length: int = 0
  output_shape: Tuple[int, ...] = ()

  def validate(self, field: str):
    _check_name(f'{field}.name', self.name)
    _check_name(f'{field}.table', self.table)
    _check_int(f'{field}.max_sequence_length', self.max_sequence_length, 0)
    for i, d in enumerate(self.output_shape):
      _check_int(f'{field}.output_shape[{i}]', d, 1)


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
      _fail(f'{field}.kind', f'unknown optimizer {self.kind!r}; one of '
            f'{sorted(OPTIMIZER_PARAMS)}')
    allowed = OPTIMIZER_PARAMS[self.kind]
    for key, value in self.params:
      if key not in allowed:
        _fail(f'{field}.{key}', f'not a parameter of {self.kind}; one of '
              f'{sorted(allowed)}')
      if isinstance(allowed[key], bool):
        if not isinstance(value, bool):
          _fail(f'{field}.{key}', f'must be true or false, got {value!r}')
      else:
        _check_number(f'{field}.{key}', value)
    hp = self.hyperparameters
    if hp['learning_rate'] <= 0:
      _fail(f'{field}.learning_rate', f'must be > 0, got {hp["learning_rate"]}')
    if hp.get('initial_accumulator_value', 1.0) < 0:
      _fail(f'{field}.initial_accumulator_value', 'must be >= 0')
    if self.kind == 'adam':
      for beta in ('beta_1', 'beta_2'):
        if not 0 <= hp[beta] < 1:
          _fail(f'{field}.{beta}', f'must be in [0, 1), got {hp[beta]}')
      if hp['epsilon'] <= 0:
        _fail(f'{field}.epsilon', f'must be > 0, got {hp["epsilon"]}')

  def build(self):
    """A fresh `tf.tpu.experimental.embedding` optimizer."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    cls = {
        'sgd': tf.tpu.experimental.embedding.SGD,
        'adagrad': tf.tpu.experimental.embedding.Adagrad,
        'adam': tf.tpu.experimental.embedding.Adam,
        'ftrl': tf.tpu.experimental.embedding.FTRL,
    }[self.kind]
    return cls(**self.hyperparameters)


@dataclasses.dataclass(frozen=True)
class EmbeddingSpec:
  """Tables, features and optimizer; the source of truth for every component."""
  tables: Tuple[TableSpec, ...]
  features: Tuple[FeatureSpec, ...]
  optimizer: OptimizerSpec = OptimizerSpec()

  def __post_init__(self):
    self.validate()

  # -- validation -------------------------------------------------------------
  def validate(self):
    if not self.tables:
      _fail('tables', 'at least one table is required')
    if not self.features:
      _fail('features', 'at least one feature is required')
    seen = set()
    for i, table in enumerate(self.tables):
      table.validate(f'tables[{i}]')
      if table.name in seen:
        _fail(f'tables[{i}].name', f'duplicate table name {table.name!r}')
      seen.add(table.name)
    seen_features = set()
    for i, feature in enumerate(self.features):
      feature.validate(f'features[{i}]')
      if feature.name in seen_features:
        _fail(f'features[{i}].name',
              f'duplicate feature name {feature.name!r}')
      seen_features.add(feature.name)
      if feature.table not in seen:
        _fail(f'features[{i}].table',
              f'unknown table {feature.table!r}; tables are {sorted(seen)}')
    self.optimizer.validate('optimizer')

  def table(self, name: str) -> TableSpec:
    for t in self.tables:
      if t.name == name:
        return t
    raise KeyError(f'embedding spec has no table {name!r}')

  def with_vocabulary_size(self, table: str, size: int) -> 'EmbeddingSpec':
    """A copy with `table`'s vocabulary size set (validated)."""
    self.table(table)
    tables = tuple(
        dataclasses.replace(t, vocabulary_size=size) if t.name == table else t
        for t in self.tables)
    return dataclasses.replace(self, tables=tables)

  def require_vocabulary_sizes(self):
    for i, t in enumerate(self.tables):
      if t.vocabulary_size < 1:
        _fail(f'tables[{i}].vocabulary_size',
              f'table {t.name!r} has no vocabulary size yet (0); set it from '
              'the vocabulary before building configs')

  # -- tf.tpu.experimental.embedding objects ----------------------------------
  def build_feature_config(self) -> Dict[str, Any]:
    """Fresh `{feature name: FeatureConfig}` with fresh `TableConfig`s."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    self.require_vocabulary_sizes()
    emb = tf.tpu.experimental.embedding
    tables = {
        t.name: emb.TableConfig(
            vocabulary_size=t.vocabulary_size,
            dim=t.dim,
            initializer=t.build_initializer(),
            combiner=t.combiner,
            name=t.name) for t in self.tables
    }
    return {
        f.name: emb.FeatureConfig(
            table=tables[f.table],
            max_sequence_length=f.max_sequence_length,
            output_shape=list(f.output_shape) or None,
            name=f.name) for f in self.features
    }

  def build_optimizer(self):
    return self.optimizer.build()

  # -- JSON -------------------------------------------------------------------
  def to_dict(self) -> Dict[str, Any]:
    return {
        'format_version': FORMAT_VERSION,
        'tables': [dataclasses.asdict(t) for t in self.tables],
        'features': [
            dict(dataclasses.asdict(f), output_shape=list(f.output_shape))
            for f in self.features
        ],
        'optimizer': {'kind': self.optimizer.kind,
                      **dict(self.optimizer.params)},
    }

  def to_json(self) -> str:
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + '\n'

  @classmethod
  def from_dict(cls, d: Dict[str, Any]) -> 'EmbeddingSpec':
    if not isinstance(d, dict):
      _fail('(root)', f'must be a JSON object, got {type(d).__name__}')
    version = d.get('format_version', FORMAT_VERSION)
    if version != FORMAT_VERSION:
      _fail('format_version', f'unsupported version {version!r}')
    unknown = set(d) - {'format_version', 'tables', 'features', 'optimizer'}
    if unknown:
      _fail(sorted(unknown)[0], 'unknown field')
    tables = tuple(
        _from_fields(TableSpec, t, f'tables[{i}]')
        for i, t in enumerate(_as_list(d.get('tables'), 'tables')))
    features = []
    for i, f in enumerate(_as_list(d.get('features'), 'features')):
      f = dict(f) if isinstance(f, dict) else f
      if isinstance(f, dict) and 'output_shape' in f:
        f['output_shape'] = tuple(_as_list(f['output_shape'],
                                           f'features[{i}].output_shape'))
      features.append(_from_fields(FeatureSpec, f, f'features[{i}]'))
    opt = d.get('optimizer', {'kind': 'adagrad'})
    if not isinstance(opt, dict):
      _fail('optimizer', 'must be an object with a "kind"')
    opt = dict(opt)
    kind = opt.pop('kind', 'adagrad')
    return cls(tables=tables, features=tuple(features),
               optimizer=OptimizerSpec(kind=kind,
                                       params=tuple(sorted(opt.items()))))

  @classmethod
  def from_json(cls, text: str) -> 'EmbeddingSpec':
    try:
      d = json.loads(text)
    except json.JSONDecodeError as e:
      raise SpecError(f'embedding spec: not valid JSON: {e}') from e
    return cls.from_dict(d)

  def save(self, directory: str) -> str:
    """Writes `embedding_spec.json` into `directory`; returns its path."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    path = f'{directory.rstrip("/")}/{SPEC_FILENAME}'
    tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(path, 'w') as f:
      f.write(self.to_json())
    return path

  @classmethod
  def load(cls, directory_or_file: str) -> 'EmbeddingSpec':
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    path = directory_or_file
    if tf.io.gfile.isdir(path):
      path = f'{path.rstrip("/")}/{SPEC_FILENAME}'
    if not tf.io.gfile.exists(path):
      raise SpecError(f'embedding spec: no {SPEC_FILENAME} at {path}')
    with tf.io.gfile.GFile(path) as f:
      return cls.from_json(f.read())


def _as_list(value: Any, field: str) -> List[Any]:
  if not isinstance(value, (list, tuple)):
    _fail(field, f'must be a list, got {value!r}')
  return list(value)


def _from_fields(cls, value: Any, field: str):
  if not isinstance(value, dict):
    _fail(field, f'must be an object, got {value!r}')
  names = {f.name for f in dataclasses.fields(cls)}
  for key in value:
    if key not in names:
      _fail(f'{field}.{key}', 'unknown field')
  try:
    return cls(**value)
  except TypeError as e:
    raise SpecError(f'embedding spec: {field}: {e}') from e


# -- the skip-gram spec the trainer uses ---------------------------------------
TOKENS_TABLE = 'tokens'
TARGET_FEATURE = 'target'
CONTEXT_FEATURE = 'context'
NEGATIVES_FEATURE = 'negatives'


def skipgram_spec(dim: int = 32,
                  optimizer: str = 'adagrad',
                  vocabulary_size: int = 0,
                  initializer: str = 'uniform',
                  combiner: str = 'sqrtn',
                  **optimizer_params) -> EmbeddingSpec:
  """One `tokens` table read by the `target`, `context` and `negatives` features.

  Target and context are looked up in the same table (item2vec style tied
  input/output vectors), so the exported table is the only learned state.
  """
  return EmbeddingSpec(
      tables=(TableSpec(name=TOKENS_TABLE, dim=dim,
                        vocabulary_size=vocabulary_size,
                        initializer=initializer, combiner=combiner),),
      features=(FeatureSpec(TARGET_FEATURE, TOKENS_TABLE),
                FeatureSpec(CONTEXT_FEATURE, TOKENS_TABLE),
                FeatureSpec(NEGATIVES_FEATURE, TOKENS_TABLE)),
      optimizer=OptimizerSpec(kind=optimizer,
                              params=tuple(sorted(optimizer_params.items()))))
