"""Vocabulary executor: count tokens of the train split with Beam.

With `vocabularies` set (a module file's FEATURES, grouped by vocabulary),
each named vocabulary counts the tokens of its features
(`named_counts`); otherwise skip-gram's `tokens` make the single one:

When the Examples carry token counts (the corpus ExampleGen writes them, see
examples_io), they are summed. Otherwise Beam counts the records: one element
per TFRecord file, each parsed and counted in batches by TensorFlow, the
per-file counts summed with Arrow.
"""

import json
from typing import Any, Dict, List

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import tensorflow as tf
from absl import logging
from tfx import types
from tfx.dsl.components.base import base_beam_executor
from tfx.types import artifact_utils

from components import keys
from components.vocabulary import named_counts
from components.vocabulary.config import VocabularyConfig
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.artifacts import vocabulary_file

_RECORDS_PER_BATCH = 8192
# Partial counts held before they are folded into one table.
_PARTIALS = 16


_fold = examples_io.fold_counts


def count_file(path: str) -> pa.Table:
  """Token counts (`values`, `counts`) of a gzipped TFRecord file of Examples.

  Records are parsed and counted a batch at a time by TensorFlow; only the
  distinct tokens of a batch reach Python.
  """
  spec = {examples_io.TOKENS_FEATURE: tf.io.RaggedFeature(tf.string)}

  def batch_counts(records):
    tokens = tf.io.parse_example(records, spec)[examples_io.TOKENS_FEATURE]
    values, _, counts = tf.unique_with_counts(tokens.flat_values,
                                              out_idx=tf.int64)
    return values, counts

  partials = [pa.table({'values': pa.array([], pa.binary()),
                        'counts': pa.array([], pa.int64())})]
  # Parsing runs beside decompression, on another core when there is one.
  batches = tf.data.TFRecordDataset(path, compression_type='GZIP').batch(
      _RECORDS_PER_BATCH).map(batch_counts, num_parallel_calls=2,
                              deterministic=False).prefetch(2)
  for values, counts in batches.as_numpy_iterator():
    partials.append(pa.table({'values': pa.array(values, pa.binary()),
                              'counts': pa.array(counts, pa.int64())}))
    if len(partials) >= _PARTIALS:
      partials = [_fold(partials)]
  return _fold(partials)


class _SumCounts(beam.CombineFn):
  """Sums per-file counts (Arrow IPC bytes) into {token: count}."""

  def create_accumulator(self):
    return []

  def add_input(self, accumulator, serialized):
    accumulator.append(examples_io.deserialize_counts(serialized))
    return [_fold(accumulator)] if len(accumulator) >= _PARTIALS else (
        accumulator)

  def merge_accumulators(self, accumulators):
    return [_fold([t for a in accumulators for t in a])]

  def extract_output(self, accumulator):
    return _as_dict(_fold(accumulator)) if accumulator else {}


def _as_dict(table: pa.Table) -> Dict[str, int]:
  return dict(zip((t.decode('utf-8') for t in
                   table.column('values').to_pylist()),
                  table.column('counts').to_pylist()))


def _write(counts: Dict[str, int], uri: str, min_count: int, max_tokens: int):
  vocab = vocabulary_file.from_counts(counts, min_count, max_tokens)
  if not vocab.tokens:
    raise ValueError(
        f'vocabulary: no token reaches min_count={min_count} '
        f'({len(counts)} distinct tokens seen); lower min_count')
  path = vocabulary_file.write(uri, vocab)
  logging.info('vocabulary: %d of %d distinct tokens kept (min_count=%d, '
               'max_tokens=%d) -> %s', len(vocab), len(counts), min_count,
               max_tokens, path)


def _write_table(table: pa.Table, uri: str, min_count: int, max_tokens: int):
  """`_write` for counts in a table, sorted and written by Arrow."""
  most = pc.max(table['counts']).as_py() if table.num_rows else None
  if most is None or most < min_count:
    raise ValueError(
        f'vocabulary: no token reaches min_count={min_count} '
        f'({table.num_rows} distinct tokens seen); lower min_count')
  kept = vocabulary_file.write_counts(uri, table, min_count, max_tokens)
  logging.info('vocabulary: %d of %d distinct tokens kept (min_count=%d, '
               'max_tokens=%d) -> %s', kept, table.num_rows, min_count,
               max_tokens, uri)


def count_and_write(pipeline: beam.Pipeline, files: List[str], uri: str,
                    min_count: int, max_tokens: int):
  """Adds the counting and writing steps to `pipeline`."""
  _ = (pipeline
       | 'Files' >> beam.Create(files)
       | 'Reshuffle' >> beam.Reshuffle()
       | 'CountFile' >> beam.Map(
           lambda path: examples_io.serialize_counts(count_file(path)))
       | 'Sum' >> beam.CombineGlobally(_SumCounts())
       | 'Write' >> beam.Map(_write, uri, min_count, max_tokens))


class Executor(base_beam_executor.BaseBeamExecutor):
  """Counts tokens, applies min_count / max_tokens, writes vocabulary.tsv."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    self._log_startup(input_dict, output_dict, exec_properties)
    examples = artifact_utils.get_single_instance(input_dict[keys.EXAMPLES])
    vocab = artifact_utils.get_single_instance(output_dict[keys.VOCABULARY])
    config = VocabularyConfig.from_exec_properties(exec_properties)
    files = examples_io.split_files(examples.uri, config.split)
    counted = examples_io.token_count_files(examples.uri, config.split)
    if config.vocabularies:  # a module file's FEATURES, by vocabulary
      min_count, max_tokens = config.min_count, config.max_tokens
      with self._make_beam_pipeline() as pipeline:
        named_counts.count_and_write(
            pipeline, files, vocab.uri, config.vocabularies, _SumCounts(),
            lambda counts, directory: _write(counts, directory, min_count,
                                             max_tokens))
      vocabularies.write_index(vocab.uri, config.vocabularies)
      vocab.set_string_custom_property(keys.EMPTY_IDS, json.dumps(
          named_counts.read_empty_ids(vocab.uri), sort_keys=True))
    elif counted:  # summed by the corpus ExampleGen per file: just add them
      logging.info('vocabulary: summing %d token count files', len(counted))
      _write_table(_fold([examples_io.read_counts(p) for p in counted]),
                   vocab.uri, config.min_count, config.max_tokens)
    else:
      with self._make_beam_pipeline() as pipeline:
        count_and_write(pipeline, files, vocab.uri, config.min_count,
                        config.max_tokens)
    span = (examples.get_int_custom_property('span')
            if examples.has_custom_property('span') else None)
    if span is not None:
      vocab.set_int_custom_property('span', span)
