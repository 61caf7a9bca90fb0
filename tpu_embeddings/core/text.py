"""Tokenization: one definition shared by the corpus ExampleGen and the exports.

The rule: a sequence is one line of UTF-8 text; tokens are separated by runs
of ASCII whitespace (space, tab, CR, LF, VT, FF), and there are no empty
tokens. No lower-casing or punctuation handling: corpora of item ids and
pre-tokenized text are used as they are. Its three forms: Python's
`tokenize` (clients, canaries), TensorFlow's `tf_tokenize` (the exports) and
Arrow's `ascii_split_whitespace` without empty tokens (the corpus
ExampleGen's encode.py); tests/components/corpus_example_gen/
test_tokenizer_parity.py checks that they agree.

Input that is not UTF-8 text is refused, not read as bytes: UTF-16 or UTF-32
(with or without a byte order mark) would give NUL-interleaved tokens.
`encoding_problem` names what such data looks like; a UTF-8 byte order mark
is allowed and is not part of the first token (`strip_utf8_bom`).
"""

import codecs
from typing import List, Optional

# The same separators on both sides: Python's bytes.split() with no argument
# and tf.strings.split() with no separator both split on runs of ASCII
# whitespace and drop empty tokens.
ASCII_WHITESPACE = ' \t\n\r\v\f'  # what bytes.split() splits on
MAX_TOKENS_PER_LINE = 10_000
MAX_TOKEN_BYTES = 256


def tokenize(line: str) -> List[str]:
  """Python tokenizer used when writing Examples."""
  return [t.decode('utf-8') for t in
          line.encode('utf-8').split()[:MAX_TOKENS_PER_LINE]]


def tf_tokenize(sentences):
  """TensorFlow tokenizer for serving: 1-D string tensor -> RaggedTensor."""
  import tensorflow as tf
  # Default separator: runs of ASCII whitespace, empty strings dropped; this
  # matches bytes.split() above.
  return tf.strings.split(sentences)


# Longest first: the UTF-32 LE mark starts with the UTF-16 LE one.
_BYTE_ORDER_MARKS = ((codecs.BOM_UTF32_LE, 'UTF-32 LE'),
                     (codecs.BOM_UTF32_BE, 'UTF-32 BE'),
                     (codecs.BOM_UTF16_LE, 'UTF-16 LE'),
                     (codecs.BOM_UTF16_BE, 'UTF-16 BE'))
# Which byte positions (mod 4) are NUL when ASCII-range text is encoded so.
_NUL_PATTERNS = (('UTF-32 LE', (1, 2, 3)), ('UTF-32 BE', (0, 1, 2)),
                 ('UTF-16 LE', (1, 3)), ('UTF-16 BE', (0, 2)))
_SAMPLE_BYTES = 4096


def _nul_pattern(data: bytes) -> Optional[str]:
  """The wide encoding whose NUL pattern `data` (from offset 0) shows."""
  sample = data[:_SAMPLE_BYTES]
  zeros = []
  for k in range(4):
    column = sample[k::4]
    zeros.append(column.count(0) / len(column) if column else 0.0)
  for name, positions in _NUL_PATTERNS:
    if all(zeros[k] > 0.9 if k in positions else zeros[k] < 0.5
           for k in range(4)):
      return name
  return None


def encoding_problem(data: bytes, final: bool = True,
                     guess: bool = True) -> Optional[str]:
  """Why `data` is not UTF-8 text, in a few words; None if it is.

  `final=False` when `data` is a file's first chunk, which may end inside a
  character. `guess` reads a byte order mark or a NUL pattern at offset 0 as
  the encoding it looks like (only meaningful from the start of a file).
  """
  if guess:
    for mark, name in _BYTE_ORDER_MARKS:
      if data.startswith(mark):
        return f'looks like {name} (byte order mark)'
  nul = data.find(b'\x00')
  if nul >= 0:
    name = _nul_pattern(data) if guess else None
    if name:
      return f'looks like {name} (NUL bytes between the characters)'
    return f'NUL byte at offset {nul}'
  try:
    if final:
      data.decode('utf-8')
    else:
      codecs.getincrementaldecoder('utf-8')().decode(data, final=False)
  except UnicodeDecodeError as e:
    return f'invalid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})'
  return None


def strip_utf8_bom(line: bytes) -> bytes:
  """`line` without a leading UTF-8 byte order mark."""
  return line[len(codecs.BOM_UTF8):] if line.startswith(
      codecs.BOM_UTF8) else line
