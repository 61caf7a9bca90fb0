"""Corpus ExampleGen executor: text lines -> tf.Example with a `tokens` feature.

One sequence per line, UTF-8, tokens split on ASCII whitespace
(components/text.py). A file that is not UTF-8 text (UTF-16/32, binary, an
invalid UTF-8 byte) fails the run with an error naming the file: its first
chunk is checked before the pipeline starts, every line while it is read.
Lines with more than MAX_TOKENS_PER_LINE tokens are capped and counted; tokens
longer than MAX_TOKEN_BYTES are dropped and counted; blank lines are skipped.
"""

import concurrent.futures
import re
from typing import Any, Dict, Iterable, List

from absl import logging
import apache_beam as beam
import tensorflow as tf
from tfx.components.example_gen import utils as example_gen_utils
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components import examples_io
from components import text

SPAN_WINDOW_KEY = 'span_window'
PATTERN_KEY = 'pattern'
METRICS_NAMESPACE = 'corpus_example_gen'
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
  from google.protobuf import json_format, struct_pb2  # pylint: disable=g-import-not-at-top,g-multiple-import
  struct = struct_pb2.Struct()
  config.custom_config.Unpack(struct)
  return json_format.MessageToDict(struct)


def span_patterns(exec_properties: Dict[str, Any], split_pattern: str,
                  input_base: str) -> List[str]:
  """The file patterns to read: the resolved span, plus earlier spans when a
  `span_window` > 1 is configured (spans that do not exist are skipped)."""
  config = parse_custom_config(exec_properties)
  window = int(config.get(SPAN_WINDOW_KEY, 1))
  if window < 1:
    raise ValueError(f'corpus ExampleGen: span_window must be >= 1, got '
                     f'{window}')
  patterns = [split_pattern]
  span = exec_properties.get(example_gen_utils.SPAN_PROPERTY_NAME)
  # The driver replaces {SPAN} in input_config; the template travels in
  # custom_config.
  template = config.get(PATTERN_KEY, '')
  if window > 1 and span is not None and re.search(
      example_gen_utils.SPAN_FULL_REGEX, template):
    for earlier in range(int(span) - 1, max(int(span) - window, -1), -1):
      token = example_gen_utils._make_zero_padding_spec_value(  # pylint: disable=protected-access
          example_gen_utils.SPAN_FULL_REGEX, template, earlier)
      pattern = re.sub(example_gen_utils.SPAN_FULL_REGEX, token, template)
      if tf.io.gfile.glob(f'{input_base.rstrip("/")}/{pattern}'):
        patterns.append(pattern)
  return patterns


class EncodingError(ValueError):
  """A corpus file is not UTF-8 text."""


def not_utf8_text(path: str, problem: str) -> EncodingError:
  seen = re.search(r'looks like (UTF-\d+) ([LB]E)', problem)
  source = f'-f {seen.group(1)}{seen.group(2)} ' if seen else ''
  return EncodingError(
      f'corpus ExampleGen: {path} is not UTF-8 text ({problem}); convert it '
      f'(e.g. iconv {source}-t UTF-8) or move it out of the input')


def _first_chunk(path: str) -> bytes:
  """The file's first chunk; raises EncodingError if it is not UTF-8 text."""
  with tf.io.gfile.GFile(path, 'rb') as f:
    chunk = f.read(FIRST_CHUNK_BYTES)
  problem = text.encoding_problem(chunk, final=len(chunk) < FIRST_CHUNK_BYTES)
  if problem:
    raise not_utf8_text(path, problem)
  return chunk


def check_files(input_base: str, patterns: Iterable[str]):
  """Fails fast, naming the file or the pattern, on a file that is not UTF-8
  text and when there is no token sequence."""
  files = []
  for pattern in patterns:
    files += sorted(tf.io.gfile.glob(f'{input_base.rstrip("/")}/{pattern}'))
  with concurrent.futures.ThreadPoolExecutor(_CHECK_THREADS) as pool:
    chunks = list(pool.map(_first_chunk, files))
  if any(chunk.split() for chunk in chunks):
    return
  for path, chunk in zip(files, chunks):
    if len(chunk) < FIRST_CHUNK_BYTES:
      continue
    with tf.io.gfile.GFile(path, 'rb') as f:  # long and blank so far
      for line in f:
        if line.split():
          return
  raise ValueError(
      f'corpus ExampleGen: no token sequences under {input_base} matching '
      f'{list(patterns)} ({len(files)} file(s), all empty); add text files '
      'with one whitespace-separated sequence per line')


class _LineToExample(beam.DoFn):
  """Decodes, tokenizes and caps one raw line; counts what it skips."""

  def __init__(self):
    self._capped = beam.metrics.Metrics.counter(METRICS_NAMESPACE,
                                                'capped_lines')
    self._long_tokens = beam.metrics.Metrics.counter(METRICS_NAMESPACE,
                                                     'dropped_long_tokens')
    self._blank = beam.metrics.Metrics.counter(METRICS_NAMESPACE, 'blank_lines')

  def start_bundle(self):
    self._bundle = {'capped': 0, 'long_tokens': 0}

  def process(self, path_and_line):
    path, line = path_and_line
    problem = text.encoding_problem(line, guess=False)
    if problem:
      raise not_utf8_text(path, f'{problem} of a line')
    line = text.strip_utf8_bom(line)
    raw = line.split()
    if len(raw) > text.MAX_TOKENS_PER_LINE:
      self._capped.inc()
      self._bundle['capped'] += 1
    tokens = []
    for t in text.tokenize_bytes(line):
      if len(t) > text.MAX_TOKEN_BYTES:
        self._long_tokens.inc()
        self._bundle['long_tokens'] += 1
      else:
        tokens.append(t.decode('utf-8'))
    if not tokens:
      self._blank.inc()
      return
    yield examples_io.make_example(tokens)

  def finish_bundle(self):
    if any(self._bundle.values()):
      logging.warning(
          'corpus ExampleGen: capped %d line(s) at %d tokens, dropped %d '
          'token(s) over %d bytes', self._bundle['capped'],
          text.MAX_TOKENS_PER_LINE, self._bundle['long_tokens'],
          text.MAX_TOKEN_BYTES)


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(tf.train.Example)
def _TextToExample(pipeline: beam.Pipeline, exec_properties: Dict[str, Any],
                   split_pattern: str) -> beam.pvalue.PCollection:
  """Reads every file of the span(s) and emits one Example per sequence."""
  input_base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
  patterns = span_patterns(exec_properties, split_pattern, input_base)
  check_files(input_base, patterns)
  logging.info('corpus ExampleGen: reading %s under %s', patterns, input_base)
  lines = [
      pipeline | f'Read[{p}]' >> beam.io.ReadFromTextWithFilename(
          f'{input_base.rstrip("/")}/{p}', coder=beam.coders.BytesCoder(),
          strip_trailing_newlines=True) for p in patterns
  ]
  return (lines | 'Flatten' >> beam.Flatten()
          | 'ToExample' >> beam.ParDo(_LineToExample()))


class Executor(BaseExampleGenExecutor):
  """FileBasedExampleGen executor for whitespace-tokenized text corpora."""

  def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
    return _TextToExample

  def Do(self, input_dict, output_dict, exec_properties):
    try:
      super().Do(input_dict, output_dict, exec_properties)
    except EncodingError as e:
      # Beam re-raises it with " [while running '<transform label>']" added.
      raise EncodingError(str(e).split(' [while running ', 1)[0]) from e
