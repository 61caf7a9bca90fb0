"""The features of stock Examples as tokens: what a model's FEATURES look up.

A feature of a `tf.train.Example` is a bytes list or an int64 list (what
CsvExampleGen infers for a column of integers; ImportExampleGen passes
records through). Its tokens: each int64 value as its decimal string, each
bytes value split on ASCII whitespace (`tpu_embeddings.core.text.tf_tokenize`),
so a CSV cell "i1 i2 i3" is a bag of three tokens and the integer 42 is the
token "42". Vocabulary counting, training, evaluation and both exports read
features through this module, so they agree on every token.
"""

from typing import Dict, Iterable, Mapping, Sequence, Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.core import text

BYTES = 'bytes'
INT64 = 'int64'
FLOAT = 'float'
DTYPES = {BYTES: tf.string, INT64: tf.int64}
# Number features (labels, dense inputs): read as float32.
NUMBER_DTYPES = {INT64: tf.int64, FLOAT: tf.float32}
# Records read to learn each feature's kind.
KIND_RECORDS = 1000


class FeatureError(ValueError):
  """A feature is missing from the Examples or has an unusable type."""


def compression(path: str) -> str:
  """TFX's ExampleGens write gzipped TFRecords (`*.gz`)."""
  return 'GZIP' if path.endswith('.gz') else ''


def records(files: Sequence[str]) -> tf.data.Dataset:
  """Serialized records of the TFRecord files of one split (all gzipped, as
  ExampleGens write them, or none)."""
  return tf.data.TFRecordDataset(
      list(files), compression_type=compression(files[0]) if files else '')


def _kind(feature: tf.train.Feature) -> str:
  return {'bytes_list': BYTES, 'int64_list': INT64,
          'float_list': FLOAT}.get(feature.WhichOneof('kind'), '')


def _file_kinds(path: str, wanted: set, max_records: int
                ) -> Tuple[Dict[str, str], set]:
  """({feature: kind} from the first records of one file that hold each
  wanted feature, every feature name seen there)."""
  kinds: Dict[str, str] = {}
  seen = set()
  for serialized in records([path]).take(max_records).as_numpy_iterator():
    example = tf.train.Example.FromString(serialized)
    for name, feature in example.features.feature.items():
      seen.add(name)
      kind = _kind(feature)
      if name in wanted and name not in kinds and kind:
        kinds[name] = kind
    if len(kinds) == len(wanted):
      break
  return kinds, seen


def _agreed_kinds(files: Sequence[str], wanted: set, max_records: int
                  ) -> Dict[str, str]:
  """{feature: kind} of every wanted feature, from the first records of
  each file that hold it; every file must agree (FeatureError)."""
  kinds: Dict[str, str] = {}
  first: Dict[str, str] = {}
  seen = set()
  for path in files:
    found, names = _file_kinds(path, wanted, max_records)
    seen |= names
    for name, kind in found.items():
      if kinds.setdefault(name, kind) != kind:
        raise FeatureError(
            f'examples: feature {name!r} is {kinds[name]} in {first[name]} '
            f'but {kind} in {path}; write the column the same way in every '
            'split and span (CsvExampleGen makes a column int64 where all '
            'its cells are integers)')
      first.setdefault(name, path)
  for name in sorted(wanted):
    if name not in kinds:
      raise FeatureError(
          f'examples {_where(files)}: no record among the first '
          f'{max_records} of a file has feature {name!r}; features there: '
          f'{sorted(seen) or "none"}')
  return kinds


def _where(files: Sequence[str]) -> str:
  return files[0] if len(files) == 1 else f'{files[0]} (+{len(files) - 1})'


def feature_kinds(files: Sequence[str], features: Iterable[str],
                  max_records: int = KIND_RECORDS) -> Dict[str, str]:
  """{feature: BYTES or INT64}, from the first records of each file that
  hold each one; every file must agree.

  Raises FeatureError naming the feature when no record read holds it, when
  it holds floats (an embedding looks up tokens, not numbers), or when files
  disagree (CsvExampleGen infers each split's column types on its own).
  """
  kinds = _agreed_kinds(files, set(features), max_records)
  for name in sorted(kinds):
    if kinds[name] not in DTYPES:
      raise FeatureError(
          f'examples {_where(files)}: feature {name!r} holds floats; a '
          'looked-up feature must be strings or integers: write its ids '
          'without a decimal point, or drop it from FEATURES')
  return kinds


def number_kind(files: Sequence[str], feature: str,
                max_records: int = KIND_RECORDS) -> str:
  """INT64 or FLOAT: how the Examples hold a number feature (a label, a
  dense input); FeatureError when it holds strings or files disagree."""
  kind = _agreed_kinds(files, {feature}, max_records)[feature]
  if kind not in NUMBER_DTYPES:
    raise FeatureError(
        f'examples {_where(files)}: feature {feature!r} holds strings, not '
        'numbers; write it as integers or decimals (CsvExampleGen makes a '
        'column of numbers int64 or float)')
  return kind


def parse_numbers(serialized: tf.Tensor, feature: str,
                  kind: str) -> tf.Tensor:
  """A batch of serialized Examples -> [B] float32: the one value each
  holds in number feature `feature` of kind INT64 or FLOAT."""
  parsed = tf.io.parse_example(serialized, {
      feature: tf.io.FixedLenFeature([], NUMBER_DTYPES[kind])})[feature]
  return tf.cast(parsed, tf.float32)


def parse_spec(kinds: Mapping[str, str]) -> Dict[str, tf.io.RaggedFeature]:
  return {name: tf.io.RaggedFeature(DTYPES[kind])
          for name, kind in kinds.items()}


def tokens(values) -> tf.RaggedTensor:
  """[B] or ragged [B, None] strings or integers -> ragged [B, None] tokens
  (a deeper ragged input: one bag per row).

  Built in few ops: TensorFlow's ragged reshapes and merges add about a
  hundred ops to every signature and input pipeline that takes the feature,
  and a trace's time goes with its ops.
  """
  if not isinstance(values, tf.RaggedTensor):
    values = tf.reshape(tf.convert_to_tensor(values), [-1])
    if values.dtype != tf.string:
      values = tf.strings.as_string(values)
    return text.tf_tokenize(values)
  values = values.with_row_splits_dtype(tf.int64)  # tf.strings.split's
  flat = values.flat_values
  if flat.dtype != tf.string:
    flat = tf.strings.as_string(flat)
  split = text.tf_tokenize(flat)  # ragged [values, None]
  if values.ragged_rank > 1:
    return values.with_flat_values(split).merge_dims(1, -1)
  # A row's tokens are its values' tokens: merge_dims(1, 2) of the ragged
  # [B, None, None], by its splits picked out of the values' (a gather
  # where merge_dims checks and reshapes in a hundred ops).
  return tf.RaggedTensor.from_row_splits(
      split.flat_values, tf.gather(split.row_splits, values.row_splits),
      validate=False)


def parse_tokens(serialized: tf.Tensor,
                 kinds: Mapping[str, str]) -> Dict[str, tf.RaggedTensor]:
  """A batch of serialized Examples -> {feature: ragged [B, None] tokens}."""
  parsed = tf.io.parse_example(serialized, parse_spec(kinds))
  return {name: tokens(parsed[name]) for name in kinds}


def joined(bags: tf.RaggedTensor) -> tf.Tensor:
  """Ragged [B, None] tokens -> [B] strings, a bag's tokens joined by spaces
  (how raw serving inputs carry a bag)."""
  return tf.strings.reduce_join(bags, axis=1, separator=' ')


def split_files(examples_uris: Sequence[str], split: str) -> list:
  """The split's files of every Examples artifact (TFX's layout)."""
  from tpu_embeddings.artifacts import examples_io
  return [f for uri in examples_uris
          for f in examples_io.split_files(uri, split)]


def read_joined(files: Sequence[str], kinds: Mapping[str, str],
                limit: int = 0, batch: int = 4096) -> Dict[str, np.ndarray]:
  """{feature: [N] object array of str}: each record's tokens of a feature
  joined by spaces, as raw serving inputs carry them (`limit` 0: all)."""
  ds = records(files)
  if limit:
    ds = ds.take(limit)
  parts: Dict[str, list] = {name: [] for name in kinds}
  for serialized in ds.batch(batch):
    for name, bags in parse_tokens(serialized, kinds).items():
      parts[name].extend(b.decode('utf-8') for b in joined(bags).numpy())
  return {name: np.array(values, dtype=object)
          for name, values in parts.items()}


def distinct(rows: Mapping[str, np.ndarray], key: str) -> Dict[str, np.ndarray]:
  """The rows of `rows` with the first occurrence of each `key` value."""
  _, first = np.unique(rows[key].astype(str), return_index=True)
  first = np.sort(first)
  return {name: values[first] for name, values in rows.items()}
