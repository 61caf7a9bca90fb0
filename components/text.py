"""Tokenization: one definition shared by the corpus ExampleGen and the exports.

A sequence is one line of UTF-8 text; tokens are separated by ASCII whitespace
(space, tab, CR, LF, VT, FF). No lower-casing or punctuation handling: corpora
of item ids and pre-tokenized text are used as they are.
"""

from typing import List

# The same separators on both sides: Python's bytes.split() with no argument
# and tf.strings.split() with no separator both split on runs of ASCII
# whitespace and drop empty tokens.
MAX_TOKENS_PER_LINE = 10_000
MAX_TOKEN_BYTES = 256


def tokenize(line: str) -> List[str]:
  """Python tokenizer used when writing Examples."""
  return [t.decode('utf-8') for t in
          line.encode('utf-8').split()[:MAX_TOKENS_PER_LINE]]


def tokenize_bytes(line: bytes) -> List[bytes]:
  """Tokens of one raw line, capped at MAX_TOKENS_PER_LINE."""
  return line.split()[:MAX_TOKENS_PER_LINE]


def tf_tokenize(sentences):
  """TensorFlow tokenizer for serving: 1-D string tensor -> RaggedTensor."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # Default separator: runs of ASCII whitespace, empty strings dropped; this
  # matches bytes.split() above.
  return tf.strings.split(sentences)
