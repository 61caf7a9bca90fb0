"""Named vocabularies: each counts the tokens of its features (Beam).

One element per TFRecord file of the split: the file's records are parsed a
batch at a time by TensorFlow (`tpu_embeddings.artifacts.raw_features`: the
tokens training and serving see, integers as decimal strings, bags split on
whitespace), each vocabulary's tokens counted, and the per-file counts
summed per vocabulary with Arrow; then each vocabulary is written with
`min_count` and `max_tokens`, and the index last.

Records whose feature holds no token (an empty CSV cell: an empty id) are
counted per feature into `empty_ids.json` beside the vocabularies; the run
summary reports them, as it does dropped tokens.
"""

import collections
import json
from typing import Dict, List, Mapping, Sequence, Tuple

import apache_beam as beam
import pyarrow as pa
import tensorflow as tf

from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib

_RECORDS_PER_BATCH = 8192
EMPTY_IDS_FILENAME = 'empty_ids.json'


def count_file(path: str, kinds: Mapping[str, str],
               vocabularies: Mapping[str, Sequence[str]]
               ) -> Tuple[Dict[str, bytes], Dict[str, int]]:
  """({vocabulary: its token counts in one file, as Arrow IPC bytes},
  {feature: records of the file where it holds no token})."""
  parts: Dict[str, List[pa.Table]] = {name: [] for name in vocabularies}
  features = sorted({f for fs in vocabularies.values() for f in fs})
  empty_ids = collections.Counter({f: 0 for f in features})

  def batch_counts(records):
    tokens = raw_features.parse_tokens(records, kinds)
    found = {}
    for name, counted in vocabularies.items():
      flat = tf.concat([tokens[f].flat_values for f in counted], 0)
      values, _, counts = tf.unique_with_counts(flat, out_idx=tf.int64)
      found[name] = (values, counts)
    empty = {f: tf.reduce_sum(tf.cast(tokens[f].row_lengths() == 0,
                                      tf.int64)) for f in features}
    return found, empty

  batches = raw_features.records([path]).batch(_RECORDS_PER_BATCH).map(
      batch_counts, num_parallel_calls=2, deterministic=False).prefetch(2)
  for found, empty in batches.as_numpy_iterator():
    for name, (values, counts) in found.items():
      parts[name].append(pa.table({'values': pa.array(values, pa.binary()),
                                   'counts': pa.array(counts, pa.int64())}))
    empty_ids.update({f: int(n) for f, n in empty.items()})
  nothing = pa.table({'values': pa.array([], pa.binary()),
                      'counts': pa.array([], pa.int64())})
  return ({name: examples_io.serialize_counts(
      examples_io.fold_counts([nothing] + tables))
           for name, tables in parts.items()}, dict(empty_ids))


def _sum_empty_ids(counts) -> Dict[str, int]:
  total = collections.Counter()
  for c in counts:
    total.update(c)
  return dict(total)


def write_empty_ids(uri: str, counts: Mapping[str, int]) -> None:
  """{feature: records with no token of it} as `empty_ids.json` in `uri`."""
  with tf.io.gfile.GFile(f'{uri.rstrip("/")}/{EMPTY_IDS_FILENAME}', 'w') as f:
    f.write(json.dumps(dict(sorted(counts.items()))) + '\n')


def read_empty_ids(uri: str) -> Dict[str, int]:
  """What `write_empty_ids` wrote ({} without the file)."""
  path = f'{uri.rstrip("/")}/{EMPTY_IDS_FILENAME}'
  if not tf.io.gfile.exists(path):
    return {}
  with tf.io.gfile.GFile(path) as f:
    return {str(k): int(v) for k, v in json.load(f).items()}


def count_and_write(pipeline: beam.Pipeline, files: List[str], uri: str,
                    vocabularies: Mapping[str, Sequence[str]],
                    sum_counts: beam.CombineFn, write):
  """Adds the counting and writing steps of every vocabulary to `pipeline`;
  `write(counts, directory)` writes one vocabulary."""
  kinds = raw_features.feature_kinds(
      files, sorted({f for fs in vocabularies.values() for f in fs}))
  counted = (pipeline
             | 'Files' >> beam.Create(files)
             | 'Reshuffle' >> beam.Reshuffle()
             | 'CountFile' >> beam.Map(
                 lambda path: count_file(path, kinds, vocabularies)))
  _ = (counted
       | 'Tokens' >> beam.FlatMap(lambda found: found[0].items())
       | 'Sum' >> beam.CombinePerKey(sum_counts)
       | 'Write' >> beam.MapTuple(
           lambda name, counts: write(
               counts, vocabularies_lib.directory_of(uri, name))))
  _ = (counted
       | 'EmptyIds' >> beam.Map(lambda found: found[1])
       | 'SumEmptyIds' >> beam.CombineGlobally(_sum_empty_ids)
       | 'WriteEmptyIds' >> beam.Map(lambda counts: write_empty_ids(uri,
                                                                    counts)))
