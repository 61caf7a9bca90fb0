"""Corpus ExampleGen executor: text lines -> tf.Example with a `tokens` feature.

One sequence per line, UTF-8, tokens split on ASCII whitespace
(tpu_embeddings/core/text.py). A file that is not UTF-8 text (UTF-16/32,
binary, an invalid UTF-8 byte) fails the run with an error naming the file: its
first chunk is checked before the pipeline starts, every line while it is read.
Files are read in byte ranges, each encoded in blocks of lines (encode.py)
and written as whole split files (transforms.py): by Beam, or, when Beam would
run in this process, by forked processes (parallel.py).
Lines with more than MAX_TOKENS_PER_LINE tokens are capped and counted; tokens
longer than MAX_TOKEN_BYTES are dropped and counted; blank lines are skipped.
"""

import concurrent.futures
import itertools
import re
from typing import Any, Dict, Iterable, List

import apache_beam as beam
import tensorflow as tf
from absl import logging
from apache_beam.options import pipeline_options
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen import write_split
from tfx.components.example_gen.base_example_gen_executor import (
  BaseExampleGenExecutor,
)
from tfx.components.util import examples_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components import keys
from components.corpus_example_gen import inputs
from components.corpus_example_gen import parallel
from components.corpus_example_gen import ranges as ranges_lib
from components.corpus_example_gen import transforms
from components.corpus_example_gen.encode import EncodingError
from components.corpus_example_gen.encode import not_utf8_text
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.core import text

METRICS_NAMESPACE = transforms.METRICS_NAMESPACE
# Bytes of each file checked for a byte order mark, NULs and invalid UTF-8
# before the pipeline starts.
FIRST_CHUNK_BYTES = 64 << 10
_CHECK_THREADS = 8


def parse_custom_config(exec_properties: Dict[str, Any]) -> Dict[str, Any]:
  """The Struct packed in `custom_config` (see component.py), as a dict."""
  raw = exec_properties.get('custom_config')
  if not raw:
    return {}
  if isinstance(raw, str):
    config = example_gen_pb2.CustomConfig()
    proto_utils.json_to_proto(raw, config)
  else:
    config = raw
  if not config.HasField('custom_config'):
    return {}
  from google.protobuf import json_format
  from google.protobuf import struct_pb2
  struct = struct_pb2.Struct()
  config.custom_config.Unpack(struct)
  return json_format.MessageToDict(struct)


def span_patterns(exec_properties: Dict[str, Any], split_pattern: str,
                  input_base: str) -> List[str]:
  """The file patterns to read: the resolved span, plus earlier spans when a
  `span_window` > 1 is configured (spans that do not exist are skipped)."""
  config = parse_custom_config(exec_properties)
  window = int(config.get(keys.SPAN_WINDOW, 1))
  if window < 1:
    raise ValueError(f'corpus ExampleGen: span_window must be >= 1, got '
                     f'{window}')
  patterns = [split_pattern]
  span = exec_properties.get(example_gen_utils.SPAN_PROPERTY_NAME)
  # The driver replaces {SPAN} in input_config; the template travels in
  # custom_config.
  template = config.get(keys.PATTERN, '')
  if window > 1 and span is not None and re.search(
      example_gen_utils.SPAN_FULL_REGEX, template):
    for earlier in range(int(span) - 1, max(int(span) - window, -1), -1):
      token = example_gen_utils._make_zero_padding_spec_value(
          example_gen_utils.SPAN_FULL_REGEX, template, earlier)
      pattern = re.sub(example_gen_utils.SPAN_FULL_REGEX, token, template)
      if tf.io.gfile.glob(f'{input_base.rstrip("/")}/{pattern}'):
        patterns.append(pattern)
  return patterns


def _first_chunk(path: str) -> bytes:
  """The file's first chunk; raises EncodingError if it is not UTF-8 text."""
  with tf.io.gfile.GFile(path, 'rb') as f:
    chunk = f.read(FIRST_CHUNK_BYTES)
  compressed = inputs.compressed(path, chunk)
  if compressed:
    raise compressed
  problem = text.encoding_problem(chunk, final=len(chunk) < FIRST_CHUNK_BYTES)
  if problem:
    raise not_utf8_text(path, problem)
  return chunk


def check_files(input_base: str, patterns: Iterable[str],
                follow_symlinks: bool = False) -> List[str]:
  """The files matched; fails fast, naming the file or the pattern, on a path
  that is not a plain file inside the data root (inputs.py), a file that is
  not UTF-8 text and when there is no token sequence."""
  files = []
  for pattern in patterns:
    files += sorted(tf.io.gfile.glob(f'{input_base.rstrip("/")}/{pattern}'))
  for path in files:
    inputs.check_path(input_base, path, follow_symlinks)
  with concurrent.futures.ThreadPoolExecutor(_CHECK_THREADS) as pool:
    chunks = list(pool.map(_first_chunk, files))
  if any(chunk.split() for chunk in chunks):
    return files
  for path, chunk in zip(files, chunks):
    if len(chunk) < FIRST_CHUNK_BYTES:
      continue
    with tf.io.gfile.GFile(path, 'rb') as f:  # long and blank so far
      for line in f:
        if line.split():
          return files
  raise ValueError(
      f'corpus ExampleGen: no token sequences under {input_base} matching '
      f'{list(patterns)} ({len(files)} file(s), all empty); add text files '
      'with one whitespace-separated sequence per line')


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(bytes)
def _TextToExample(pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
                   split_pattern: str) -> beam.pvalue.PCollection:
  """Reads every file of the span(s); one serialized Example per sequence."""
  return (pipeline | 'Ranges' >> beam.Create(
      _ranges(exec_properties, split_pattern))
          | 'Reshuffle' >> beam.Reshuffle()
          | 'ToExamples' >> beam.ParDo(transforms.RangeToRecords()))


def _ranges(exec_properties: Dict[str, Any], split_pattern: str):
  input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
  patterns = span_patterns(exec_properties, split_pattern, input_base)
  follow = bool(parse_custom_config(exec_properties).get(
      keys.FOLLOW_SYMLINKS, False))
  files = check_files(input_base, patterns, follow)
  logging.info('corpus ExampleGen: reading %s under %s', patterns, input_base)
  return ranges_lib.plan(files)


def _record_skipped(artifact, skipped):
  """Capped lines and dropped tokens as custom properties: the run summary
  reports them."""
  for name in (keys.CAPPED_LINES, keys.DROPPED_LONG_TOKENS):
    artifact.set_int_custom_property(name, int(skipped.get(name, 0)))
  if skipped.get('file'):
    artifact.set_string_custom_property(keys.FIRST_SKIPPING_FILE,
                                        skipped['file'])


class Executor(BaseExampleGenExecutor):
  """FileBasedExampleGen executor for whitespace-tokenized text corpora.

  `Do` writes TFX's layout (`Split-<name>/data_tfrecord-*.gz`, split by
  TFX's hash of each record) straight from each file range: the records
  never pass one by one through Beam.
  """

  def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
    return _TextToExample

  def _in_process(self) -> bool:
    """Whether Beam would run in this process (the in-memory DirectRunner):
    then the ranges are written without Beam, by `parallel`."""
    if self._make_beam_pipeline_fn is not None:
      return False
    options = pipeline_options.PipelineOptions(self._beam_pipeline_args)
    runner = options.view_as(pipeline_options.StandardOptions).runner
    return runner in (None, 'DirectRunner', 'direct') and options.view_as(
        pipeline_options.DirectOptions).direct_running_mode == 'in_memory'

  def Do(self, input_dict, output_dict, exec_properties):
    try:
      self._write_splits(output_dict, exec_properties)
    except EncodingError as e:
      # Beam re-raises it with " [while running '<transform label>']" added.
      raise EncodingError(str(e).split(' [while running ', 1)[0]) from e

  def _write_splits(self, output_dict, exec_properties):
    self._log_startup({}, output_dict, exec_properties)
    input_config = proto_utils.json_to_proto(
        exec_properties[standard_component_specs.INPUT_CONFIG_KEY],
        example_gen_pb2.Input())
    output_config = proto_utils.json_to_proto(
        exec_properties[standard_component_specs.OUTPUT_CONFIG_KEY],
        example_gen_pb2.Output())
    if len(input_config.splits) != 1 or not output_config.split_config.splits:
      raise ValueError('corpus ExampleGen: expects one input split and '
                       'hash-bucket output splits')
    examples = output_dict[standard_component_specs.EXAMPLES_KEY]
    names = example_gen_utils.generate_output_split_names(input_config,
                                                          output_config)
    artifact_utils.get_single_instance(examples).split_names = (
        artifact_utils.encode_split_names(names))
    buckets = list(itertools.accumulate(
        s.hash_buckets for s in output_config.split_config.splits))
    uri = artifact_utils.get_single_instance(examples).uri
    temp_dir = f'{uri.rstrip("/")}/.writing'
    dirs = transforms.make_dirs(
        [artifact_utils.get_split_uri(examples, n) for n in names])
    count_dirs = transforms.make_dirs(
        [examples_io.token_counts_dir(uri, n) for n in names])
    transforms.make_dirs([temp_dir])
    ranges = _ranges(exec_properties, input_config.splits[0].pattern)
    write = transforms.WriteRangeSplits(dirs, count_dirs, buckets,
                                        len(ranges), temp_dir)
    try:
      if self._in_process():
        workers = parallel.workers_for(ranges)
        logging.info('corpus ExampleGen: %d range(s) in %d process(es)',
                     len(ranges), workers)
        parallel.run(lambda element: list(write.process(element)),
                     list(enumerate(ranges)), workers,
                     describe=lambda element: element[1][0])
      else:
        with self._make_beam_pipeline() as pipeline:
          _ = (pipeline | 'Ranges' >> beam.Create(list(enumerate(ranges)))
               | 'Reshuffle' >> beam.Reshuffle()
               | 'WriteSplits' >> beam.ParDo(write))
      skipped = transforms.skipped_totals(temp_dir)
    except BaseException:  # no split half written: none at all
      write.remove_outputs()
      raise
    finally:  # a failed or stopped range may leave its temps
      if tf.io.gfile.exists(temp_dir):
        tf.io.gfile.rmtree(temp_dir)
    for artifact in examples:
      _record_skipped(artifact, skipped)
      examples_utils.set_payload_format(
          artifact, exec_properties.get(
              standard_component_specs.OUTPUT_DATA_FORMAT_KEY,
              example_gen_pb2.FORMAT_TF_EXAMPLE))
      examples_utils.set_file_format(
          artifact, write_split.to_file_format_str(exec_properties.get(
              standard_component_specs.OUTPUT_FILE_FORMAT_KEY,
              example_gen_pb2.FILE_FORMAT_UNSPECIFIED)))
