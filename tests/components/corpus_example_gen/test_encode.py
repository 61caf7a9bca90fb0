"""encode_block: whole blocks of lines -> the records a per-line loop writes."""

import random

import pytest

from components.corpus_example_gen import encode
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.core import text


def _per_line(block: bytes):
  """The reference: one line at a time, as ExampleGen used to do it."""
  records, capped, long_tokens, blank = [], 0, 0, 0
  for line in block.split(b'\n')[:-1] if block.endswith(b'\n') else (
      block.split(b'\n')):
    line = text.strip_utf8_bom(line)
    if len(line.split()) > text.MAX_TOKENS_PER_LINE:
      capped += 1
    tokens = []
    for t in text.tokenize(line.decode('utf-8')):
      if len(t.encode('utf-8')) > text.MAX_TOKEN_BYTES:
        long_tokens += 1
      else:
        tokens.append(t)
    if tokens:
      records.append(examples_io.make_example(tokens).SerializeToString(
          deterministic=True))
    else:
      blank += 1
  return records, encode.Counts(capped, long_tokens, blank)


def _random_block(rng: random.Random, lines: int) -> bytes:
  words = ['a', 'bb', 'café', '東京', 'x' * text.MAX_TOKEN_BYTES,
           'y' * (text.MAX_TOKEN_BYTES + 1), '\ufeffbom']
  spaces = [' ', '  ', '\t', '\r', '\x0b', '\x0c']
  out = []
  for _ in range(lines):
    n = rng.choice([0, 1, 3, 12, text.MAX_TOKENS_PER_LINE + 2])
    line = ''.join(rng.choice(spaces) + rng.choice(words) for _ in range(n))
    if rng.random() < 0.3:
      line += rng.choice(spaces)
    if rng.random() < 0.1:
      line = '\ufeff' + line
    out.append(line)
  return '\n'.join(out).encode('utf-8')


@pytest.mark.slow
@pytest.mark.parametrize('seed', range(5))
@pytest.mark.parametrize('newline_at_end', [True, False])
def test_blocks_encode_like_one_line_at_a_time(seed, newline_at_end):
  block = _random_block(random.Random(seed), 60)
  if newline_at_end:
    block += b'\n'
  records, counts = encode.encode_block(block, 'f.txt')
  want_records, want_counts = _per_line(block)
  assert records == want_records
  assert counts == want_counts
  assert counts.capped_lines and counts.dropped_long_tokens


def test_tokens_over_256_bytes_are_dropped_and_lines_cut_at_10000_tokens():
  """docs/failure_behaviour.md's limits as literals, not the constants
  under test."""
  block = (b'x' * 256 + b' ' + b'y' * 257 + b' ' + 'é'.encode() * 129 + b'\n'
           + b' '.join(b'w%d' % i for i in range(10_001)) + b'\n')
  records, counts = encode.encode_block(block, 'f.txt')
  assert records == [
      examples_io.make_example(['x' * 256]).SerializeToString(
          deterministic=True),
      examples_io.make_example([f'w{i}' for i in range(10_000)])
      .SerializeToString(deterministic=True)]
  assert counts == encode.Counts(capped_lines=1, dropped_long_tokens=2)


def test_empty_and_blank_blocks():
  assert encode.encode_block(b'', 'f.txt') == ([], encode.Counts())
  assert encode.encode_block(b'\n \t\n\n', 'f.txt') == (
      [], encode.Counts(blank_lines=3))


@pytest.mark.parametrize('block, problem', [
    (b'ok line\ncaf\xe9 au lait\n', 'invalid UTF-8 (byte 0xe9 at offset 3)'),
    (b'ok line\nbin\x00ary\n', 'NUL byte at offset 3'),
])
def test_a_bad_line_is_named_with_its_offset(block, problem):
  with pytest.raises(encode.EncodingError) as e:
    encode.encode_block(block, '/data/f.txt')
  assert str(e.value) == (
      f'corpus ExampleGen: /data/f.txt is not UTF-8 text ({problem} of a '
      'line); convert it (e.g. iconv -t UTF-8) or move it out of the input')
