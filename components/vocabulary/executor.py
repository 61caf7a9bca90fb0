"""Vocabulary executor: count tokens of the train split with Beam."""

from typing import Any, Dict, List

from absl import logging
import apache_beam as beam
import tensorflow as tf
from tfx import types
from tfx.dsl.components.base import base_beam_executor
from tfx.types import artifact_utils

from components import examples_io
from components import vocabulary_file
from components.vocabulary.config import VocabularyConfig

EXAMPLES_KEY = 'examples'
VOCABULARY_KEY = 'vocabulary'


def _tokens(record: bytes) -> List[str]:
  example = tf.train.Example.FromString(record)
  values = example.features.feature[examples_io.TOKENS_FEATURE].bytes_list.value
  return [v.decode('utf-8') for v in values]


def _write(counts: List, uri: str, min_count: int, max_tokens: int):
  vocab = vocabulary_file.from_counts(dict(counts), min_count, max_tokens)
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
       | 'Read' >> beam.io.ReadAllFromTFRecord(
           compression_type=beam.io.filesystem.CompressionTypes.GZIP)
       | 'Tokens' >> beam.FlatMap(_tokens)
       | 'Count' >> beam.combiners.Count.PerElement()
       | 'Gather' >> beam.combiners.ToList()
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
