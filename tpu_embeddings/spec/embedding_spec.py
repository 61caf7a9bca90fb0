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

from tpu_embeddings.spec.bounds import DIMS
from tpu_embeddings.spec.bounds import INITIALIZER_SCALES
from tpu_embeddings.spec.bounds import OUTPUT_DIMS
from tpu_embeddings.spec.bounds import ROWS
from tpu_embeddings.spec.bounds import SEQUENCE_LENGTHS
from tpu_embeddings.spec.checks import SpecError
from tpu_embeddings.spec.checks import check_int
from tpu_embeddings.spec.checks import check_name
from tpu_embeddings.spec.checks import check_number
from tpu_embeddings.spec.checks import fail
from tpu_embeddings.spec.optimizer_spec import OptimizerSpec

SPEC_FILENAME = 'embedding_spec.json'
# Version 2 names each table's vocabulary; a spec without one is written as
# version 1, byte for byte what earlier releases wrote.
FORMAT_VERSION = 2
FORMAT_VERSIONS = (1, 2)

INITIALIZERS = ('truncated_normal', 'uniform', 'zeros')
COMBINERS = ('mean', 'sum', 'sqrtn')


@dataclasses.dataclass(frozen=True)
class TableSpec:
  """One embedding table; row i is token i of its vocabulary.

  `vocabulary` names the vocabulary the rows follow ('' is the artifact's
  single vocabulary, as skip-gram has); `vocabulary_size` 0 means "set from
  that vocabulary".
  """
  name: str
  dim: int
  vocabulary_size: int = 0
  initializer: str = 'uniform'
  # truncated_normal: stddev (default 1/sqrt(dim)); uniform: half-width
  # (default 0.5/dim, word2vec's choice).
  initializer_scale: Optional[float] = None
  combiner: str = 'mean'
  vocabulary: str = ''

  def validate(self, field: str):
    check_name(f'{field}.name', self.name)
    if self.vocabulary:
      check_name(f'{field}.vocabulary', self.vocabulary)
    check_int(f'{field}.dim', self.dim, *DIMS)
    check_int(f'{field}.vocabulary_size', self.vocabulary_size, *ROWS)
    if self.initializer not in INITIALIZERS:
      fail(f'{field}.initializer',
            f'unknown initializer {self.initializer!r}; one of {INITIALIZERS}')
    if self.initializer_scale is not None:
      check_number(f'{field}.initializer_scale', self.initializer_scale,
                   *INITIALIZER_SCALES)
    if self.combiner not in COMBINERS:
      fail(f'{field}.combiner',
            f'unknown combiner {self.combiner!r}; one of {COMBINERS}')

  def build_initializer(self):
    """The table's initializer (random ones cost one table of memory:
    `tpu_embeddings.spec.initializers`)."""
    import tensorflow as tf

    from tpu_embeddings.spec import initializers
    if self.initializer == 'zeros':
      return tf.zeros_initializer()
    if self.initializer == 'truncated_normal':
      # The mid-level API's default distribution.
      return initializers.TruncatedNormal(
          self.initializer_scale or 1.0 / math.sqrt(self.dim))
    scale = self.initializer_scale or 0.5 / self.dim
    return initializers.Uniform(minval=-scale, maxval=scale)


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
  """One input feature looked up in `table`."""
  name: str
  table: str
  max_sequence_length: int = 0
  output_shape: Tuple[int, ...] = ()

  def validate(self, field: str):
    check_name(f'{field}.name', self.name)
    check_name(f'{field}.table', self.table)
    check_int(f'{field}.max_sequence_length', self.max_sequence_length,
              *SEQUENCE_LENGTHS)
    for i, d in enumerate(self.output_shape):
      check_int(f'{field}.output_shape[{i}]', d, *OUTPUT_DIMS)


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
      fail('tables', 'at least one table is required')
    if not self.features:
      fail('features', 'at least one feature is required')
    seen = set()
    for i, table in enumerate(self.tables):
      table.validate(f'tables[{i}]')
      if table.name in seen:
        fail(f'tables[{i}].name', f'duplicate table name {table.name!r}')
      seen.add(table.name)
    seen_features = set()
    for i, feature in enumerate(self.features):
      feature.validate(f'features[{i}]')
      if feature.name in seen_features:
        fail(f'features[{i}].name',
              f'duplicate feature name {feature.name!r}')
      seen_features.add(feature.name)
      if feature.table not in seen:
        fail(f'features[{i}].table',
              f'unknown table {feature.table!r}; tables are {sorted(seen)}')
    self.optimizer.validate('optimizer')

  def table(self, name: str) -> TableSpec:
    for t in self.tables:
      if t.name == name:
        return t
    raise KeyError(f'embedding spec has no table {name!r}')

  def with_vocabulary_size(self, table: str, size: int) -> 'EmbeddingSpec':
    """A copy with `table`'s vocabulary size set (validated)."""
    return self.with_table(table, vocabulary_size=size)

  def with_table(self, table: str, **changes) -> 'EmbeddingSpec':
    """A copy with fields of table `table` changed (validated)."""
    self.table(table)
    tables = tuple(
        dataclasses.replace(t, **changes) if t.name == table else t
        for t in self.tables)
    return dataclasses.replace(self, tables=tables)

  def features_of(self, table: str) -> Tuple[str, ...]:
    """Names of the features looked up in `table`, in spec order."""
    return tuple(f.name for f in self.features if f.table == table)

  def only_tables(self, names) -> 'EmbeddingSpec':
    """A copy with just the tables `names` and the features reading them."""
    names = set(names)
    for name in names:
      self.table(name)
    return dataclasses.replace(
        self, tables=tuple(t for t in self.tables if t.name in names),
        features=tuple(f for f in self.features if f.table in names))

  def require_vocabulary_sizes(self):
    for i, t in enumerate(self.tables):
      if t.vocabulary_size < 1:
        fail(f'tables[{i}].vocabulary_size',
              f'table {t.name!r} has no vocabulary size yet (0); set it from '
              'the vocabulary before building configs')

  # -- tf.tpu.experimental.embedding objects ----------------------------------
  def build_feature_config(self) -> Dict[str, Any]:
    """Fresh `{feature name: FeatureConfig}` with fresh `TableConfig`s."""
    import tensorflow as tf
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

  def build_optimizer(self, learning_rate_scale=None):
    return self.optimizer.build(learning_rate_scale)

  # -- JSON -------------------------------------------------------------------
  def to_dict(self) -> Dict[str, Any]:
    named = any(t.vocabulary for t in self.tables)
    return {
        'format_version': FORMAT_VERSION if named else 1,
        'tables': [_table_dict(t, named) for t in self.tables],
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
      fail('(root)', f'must be a JSON object, got {type(d).__name__}')
    version = d.get('format_version', FORMAT_VERSION)
    if version not in FORMAT_VERSIONS:
      fail('format_version', f'unsupported version {version!r}; this '
           f'release reads {list(FORMAT_VERSIONS)}')
    unknown = set(d) - {'format_version', 'tables', 'features', 'optimizer'}
    if unknown:
      fail(sorted(unknown)[0], 'unknown field')
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
      fail('optimizer', 'must be an object with a "kind"')
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
    import tensorflow as tf
    path = f'{directory.rstrip("/")}/{SPEC_FILENAME}'
    tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(path, 'w') as f:
      f.write(self.to_json())
    return path

  @classmethod
  def load(cls, directory_or_file: str) -> 'EmbeddingSpec':
    import tensorflow as tf
    path = directory_or_file
    if tf.io.gfile.isdir(path):
      path = f'{path.rstrip("/")}/{SPEC_FILENAME}'
    if not tf.io.gfile.exists(path):
      raise SpecError(f'embedding spec: no {SPEC_FILENAME} at {path}')
    with tf.io.gfile.GFile(path) as f:
      return cls.from_json(f.read())


def _table_dict(table: TableSpec, named: bool) -> Dict[str, Any]:
  d = dataclasses.asdict(table)
  if not named:
    del d['vocabulary']  # version 1 had no such field
  return d


def _as_list(value: Any, field: str) -> List[Any]:
  if not isinstance(value, (list, tuple)):
    fail(field, f'must be a list, got {value!r}')
  return list(value)


def _from_fields(cls, value: Any, field: str):
  if not isinstance(value, dict):
    fail(field, f'must be an object, got {value!r}')
  names = {f.name for f in dataclasses.fields(cls)}
  for key in value:
    if key not in names:
      fail(f'{field}.{key}', 'unknown field')
  try:
    return cls(**value)
  except TypeError as e:
    raise SpecError(f'embedding spec: {field}: {e}') from e
