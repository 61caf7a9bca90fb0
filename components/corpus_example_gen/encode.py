"""Blocks of text lines -> serialized `tf.Example`s, a whole block at a time.

A block is a run of complete lines of one file. Checking, tokenizing, capping
and serializing happen in C++ (Python's UTF-8 decoder, Arrow's whitespace
split, tfx_bsl's Example encoder) over the block, not per line in Python: the
records are byte for byte what `examples_io.make_example(tokens)` serializes.
"""

import codecs
import dataclasses
import re
from typing import List, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from tfx_bsl.coders import example_coder

from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.core import text

_BOM_AT_LINE_START = re.compile(rb'(\A|\n)\xef\xbb\xbf')
NO_TOKENS = pa.array([], pa.list_(pa.binary()))


class EncodingError(ValueError):
  """A corpus file is not UTF-8 text."""


def not_utf8_text(path: str, problem: str) -> EncodingError:
  seen = re.search(r'looks like (UTF-\d+) ([LB]E)', problem)
  source = f'-f {seen.group(1)}{seen.group(2)} ' if seen else ''
  return EncodingError(
      f'corpus ExampleGen: {path} is not UTF-8 text ({problem}); convert it '
      f'(e.g. iconv {source}-t UTF-8) or move it out of the input')


@dataclasses.dataclass
class Counts:
  """What a block held besides its records."""
  capped_lines: int = 0
  dropped_long_tokens: int = 0
  blank_lines: int = 0

  def add(self, other: 'Counts'):
    for field in dataclasses.fields(self):
      setattr(self, field.name,
              getattr(self, field.name) + getattr(other, field.name))


def check_block(block: bytes, path: str):
  """Raises EncodingError naming `path` and the problem of its first bad line
  (NUL bytes, invalid UTF-8)."""
  try:
    if b'\x00' not in block:
      block.decode('utf-8')
      return
  except UnicodeDecodeError:
    pass
  for line in block.split(b'\n'):
    problem = text.encoding_problem(line, guess=False)
    if problem:
      raise not_utf8_text(path, f'{problem} of a line')


def _exclusive_cumsum(mask: np.ndarray) -> np.ndarray:
  out = np.zeros(mask.size + 1, np.int64)
  np.cumsum(mask, out=out[1:])
  return out


def encode_block(block: bytes, path: str) -> Tuple[List[bytes], Counts]:
  """The serialized Examples of the block's non-blank lines, in order.

  Tokens: `tpu_embeddings.core.text`'s rule (runs of non-ASCII-whitespace,
  as `bytes.split()`), the first MAX_TOKENS_PER_LINE of a line, without
  those over MAX_TOKEN_BYTES.
  """
  records, counts, _ = encode_block_with_tokens(block, path)
  return records, counts


def encode_block_with_tokens(
    block: bytes, path: str) -> Tuple[List[bytes], Counts, pa.ListArray]:
  """`encode_block`, plus each record's tokens (list<binary>, same order)."""
  check_block(block, path)
  if codecs.BOM_UTF8 in block:
    block = _BOM_AT_LINE_START.sub(rb'\1', block)
  if not block:
    return [], Counts(), NO_TOKENS
  ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10) + 1
  if not ends.size or ends[-1] != len(block):
    ends = np.append(ends, len(block))
  offsets = np.zeros(ends.size + 1, np.int32)
  offsets[1:] = ends
  lines = pa.StringArray.from_buffers(ends.size, pa.py_buffer(offsets),
                                      pa.py_buffer(block))
  # Arrow keeps an empty token for leading or trailing whitespace.
  split = pc.ascii_split_whitespace(lines)
  starts = np.asarray(split.offsets)
  sizes = np.asarray(pc.binary_length(split.values))
  real = sizes > 0
  real_before = _exclusive_cumsum(real)
  per_line = np.diff(starts)
  rank = real_before[:-1] - np.repeat(real_before[starts[:-1]], per_line)
  in_cap = real & (rank < text.MAX_TOKENS_PER_LINE)
  keep = in_cap & (sizes <= text.MAX_TOKEN_BYTES)
  kept_before = _exclusive_cumsum(keep)
  kept_per_line = np.diff(kept_before[starts])
  counts = Counts(
      capped_lines=int(np.count_nonzero(
          np.diff(real_before[starts]) > text.MAX_TOKENS_PER_LINE)),
      dropped_long_tokens=int(np.count_nonzero(in_cap) -
                              np.count_nonzero(keep)),
      blank_lines=int(np.count_nonzero(kept_per_line == 0)))
  tokens = pa.ListArray.from_arrays(
      pa.array(kept_before[starts], pa.int32()),
      split.values.filter(pa.array(keep)).cast(pa.binary()))
  tokens = tokens.filter(pa.array(kept_per_line > 0))
  if not len(tokens):
    return [], counts, NO_TOKENS
  batch = pa.RecordBatch.from_arrays([tokens], [examples_io.TOKENS_FEATURE])
  return example_coder.RecordBatchToExamples(batch), counts, tokens
