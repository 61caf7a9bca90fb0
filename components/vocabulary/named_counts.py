"""Named vocabularies: each counts the tokens of its features (Beam).

One element per TFRecord file of the split: the file's records are parsed a
batch at a time by TensorFlow (`tpu_embeddings.artifacts.raw_features`: the
tokens training and serving see, integers as decimal strings, bags split on
whitespace), each vocabulary's tokens counted, and the per-file counts
summed per vocabulary with Arrow; then each vocabulary is written with
`min_count` and `max_tokens`, and the index last.
"""

from typing import Dict, List, Mapping, Sequence

import apache_beam as beam
import pyarrow as pa
import tensorflow as tf

from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib

_RECORDS_PER_BATCH = 8192


def count_file(path: str, kinds: Mapping[str, str],
               vocabularies: Mapping[str, Sequence[str]]) -> Dict[str, bytes]:
  """{vocabulary: its token counts in one file, as Arrow IPC bytes}."""
  parts: Dict[str, List[pa.Table]] = {name: [] for name in vocabularies}

  def batch_counts(records):
    tokens = raw_features.parse_tokens(records, kinds)
    found = {}
    for name, features in vocabularies.items():
      flat = tf.concat([tokens[f].flat_values for f in features], 0)
      values, _, counts = tf.unique_with_counts(flat, out_idx=tf.int64)
      found[name] = (values, counts)
    return found

  batches = raw_features.records([path]).batch(_RECORDS_PER_BATCH).map(
      batch_counts, num_parallel_calls=2, deterministic=False).prefetch(2)
  for found in batches.as_numpy_iterator():
    for name, (values, counts) in found.items():
      parts[name].append(pa.table({'values': pa.array(values, pa.binary()),
                                   'counts': pa.array(counts, pa.int64())}))
  empty = pa.table({'values': pa.array([], pa.binary()),
                    'counts': pa.array([], pa.int64())})
  return {name: examples_io.serialize_counts(
      examples_io.fold_counts([empty] + tables))
          for name, tables in parts.items()}


def count_and_write(pipeline: beam.Pipeline, files: List[str], uri: str,
                    vocabularies: Mapping[str, Sequence[str]],
                    sum_counts: beam.CombineFn, write):
  """Adds the counting and writing steps of every vocabulary to `pipeline`;
  `write(counts, directory)` writes one vocabulary."""
  kinds = raw_features.feature_kinds(
      files, sorted({f for fs in vocabularies.values() for f in fs}))
  _ = (pipeline
       | 'Files' >> beam.Create(files)
       | 'Reshuffle' >> beam.Reshuffle()
       | 'CountFile' >> beam.FlatMap(
           lambda path: count_file(path, kinds, vocabularies).items())
       | 'Sum' >> beam.CombinePerKey(sum_counts)
       | 'Write' >> beam.MapTuple(
           lambda name, counts: write(
               counts, vocabularies_lib.directory_of(uri, name))))
