"""Vocabulary executor: count tokens of the train split with Beam.

One Beam element per TFRecord file: each file is counted in batches by Arrow,
and the per-file counts are summed.
"""

import collections
from typing import Any, Dict, List

from absl import logging
import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import tensorflow as tf
from tfx import types
from tfx.dsl.components.base import base_beam_executor
from tfx.types import artifact_utils
from tfx_bsl.coders import example_coder

from components import examples_io
from components import vocabulary_file
from components.vocabulary.config import VocabularyConfig

EXAMPLES_KEY = 'examples'
VOCABULARY_KEY = 'vocabulary'


_RECORDS_PER_BATCH = 8192
# Partial counts held per file before they are folded into one table.
_PARTIALS = 16


def _fold(partials: List[pa.Table]) -> pa.Table:
  table = pa.concat_tables(partials).group_by('values').aggregate(
      [('counts', 'sum')])
  return pa.table({'values': table['values'], 'counts': table['counts_sum']})


def count_file(path: str) -> Dict[str, int]:
  """Token counts of one gzipped TFRecord file of Examples.

  Records are parsed a batch at a time (tfx_bsl's Example decoder) and counted
  by Arrow: no Python work per token or per record.
  """
  decoder = example_coder.ExamplesToRecordBatchDecoder()
  partials = []
  records = tf.data.TFRecordDataset(path, compression_type='GZIP').batch(
      _RECORDS_PER_BATCH)
  for batch in records.as_numpy_iterator():
    decoded = decoder.DecodeBatch(batch.tolist())
    if examples_io.TOKENS_FEATURE not in decoded.schema.names:
      continue
    counts = pc.value_counts(pc.list_flatten(
        decoded.column(examples_io.TOKENS_FEATURE))).flatten()
    partials.append(pa.table({'values': counts[0], 'counts': counts[1]}))
    if len(partials) >= _PARTIALS:
      partials = [_fold(partials)]
  if not partials:
    return {}
  table = _fold(partials)
  return dict(zip((t.decode('utf-8') for t in
                   table.column('values').to_pylist()),
                  table.column('counts').to_pylist()))


class _MergeCounts(beam.CombineFn):
  """Sums per-file token counts into one dict."""

  def create_accumulator(self):
    return collections.Counter()

  def add_input(self, accumulator, counts):
    accumulator.update(counts)
    return accumulator

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    merged = next(accumulators)
    for other in accumulators:
      merged.update(other)
    return merged

  def extract_output(self, accumulator):
    return dict(accumulator)


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


def count_and_write(pipeline: beam.Pipeline, files: List[str], uri: str,
                    min_count: int, max_tokens: int):
  """Adds the counting and writing steps to `pipeline`."""
  _ = (pipeline
       | 'Files' >> beam.Create(files)
       | 'Reshuffle' >> beam.Reshuffle()
       | 'CountFile' >> beam.Map(count_file)
       | 'Merge' >> beam.CombineGlobally(_MergeCounts())
       | 'Write' >> beam.Map(_write, uri, min_count, max_tokens))


class Executor(base_beam_executor.BaseBeamExecutor):
  """Counts tokens, applies min_count / max_tokens, writes vocabulary.tsv."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    self._log_startup(input_dict, output_dict, exec_properties)
    examples = artifact_utils.get_single_instance(input_dict[EXAMPLES_KEY])
    vocab = artifact_utils.get_single_instance(output_dict[VOCABULARY_KEY])
    config = VocabularyConfig.from_exec_properties(exec_properties)
    files = examples_io.split_files(examples.uri, config.split)
    with self._make_beam_pipeline() as pipeline:
      count_and_write(pipeline, files, vocab.uri, config.min_count,
                      config.max_tokens)
    span = examples.get_int_custom_property('span') if examples.has_custom_property('span') else None
    if span is not None:
      vocab.set_int_custom_property('span', span)
