"""Token -> table row, shared by the serving SavedModel and the Hub module.

Both exports build an int64-keyed hash table from their vocabulary asset when
they are loaded: keys are 63-bit fingerprints
(`tf.strings.to_hash_bucket_fast`), as an int64 table is cheaper to build and
probe than a string-keyed one. Each value packs the row id (low `ID_BITS`) with
a second, independent 31-bit hash of the token (`tf.strings.to_hash_bucket`),
which `decode` compares against the query's: an OOV token whose fingerprint
equals a vocabulary token's is still OOV (chance about vocabulary size / 2**94
per token). A vocabulary in which two tokens share a fingerprint
(`fingerprints_collide`) is served from a plain string-keyed table instead.
"""

from typing import Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import vocabulary_file

FINGERPRINT_BUCKETS = (1 << 63) - 1
CHECK_BUCKETS = (1 << 31) - 1
ID_BITS = 32
_ID_MASK = (1 << ID_BITS) - 1
# Vocabulary sizes the id field holds: fewer than 2**ID_BITS.
MAX_TOKENS = _ID_MASK
# Default value of a lookup: id 0 with check CHECK_BUCKETS, a value
# to_hash_bucket never returns, so it never passes the check.
MISSING = CHECK_BUCKETS << ID_BITS


def read_lines(path: tf.Tensor, size: int) -> tf.Tensor:
  """The `size` lines of a one-token-per-line file as a [size] string tensor.

  Fails when the file does not hold exactly `size` newline-terminated lines.
  """
  # The raw op, not tf.strings.split: its ragged result computes row bounds
  # that graph shape inference evaluates, reading and splitting the whole file
  # once more each time a function holding this is traced or loaded.
  lines = tf.raw_ops.StringSplitV2(
      input=tf.reshape(tf.io.read_file(path), [1]), sep='\n').values
  # A complete file ends with a newline: one empty piece after the last token.
  with tf.control_dependencies([tf.debugging.assert_equal(
      tf.size(lines), size + 1,
      message=f'{vocabulary_file.TOKENS_ASSET_FILENAME} does not hold '
      f'{size} tokens')]):
    return tf.identity(lines[:size])


def keys(tokens: tf.Tensor) -> tf.Tensor:
  """Hash table keys of `tokens` (any shape)."""
  return tf.strings.to_hash_bucket_fast(tokens, FINGERPRINT_BUCKETS)


def keys_and_values(vocabulary: tf.Tensor,
                    size: int) -> Tuple[tf.Tensor, tf.Tensor]:
  """Table contents for a [size] vocabulary whose token i is row i."""
  # `size` is a Python int: a range over tf.size(vocabulary) would make graph
  # shape inference read the vocabulary file to learn the range's length.
  ids = tf.range(size, dtype=tf.int64)
  values = tf.bitwise.bitwise_or(ids, tf.bitwise.left_shift(
      tf.strings.to_hash_bucket(vocabulary, CHECK_BUCKETS),
      tf.constant(ID_BITS, tf.int64)))
  return keys(vocabulary), values


def decode(found: tf.Tensor, tokens: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """`(ids, known)` from the values a lookup of `keys(tokens)` returned.

  The lookup's default value must be `MISSING`. OOV tokens get id 0.
  """
  ids = tf.bitwise.bitwise_and(found, tf.constant(_ID_MASK, tf.int64))
  known = tf.equal(
      tf.bitwise.right_shift(found, tf.constant(ID_BITS, tf.int64)),
      tf.strings.to_hash_bucket(tokens, CHECK_BUCKETS))
  return ids, known


def fingerprints_collide(tokens_path: str) -> bool:
  """True when two lines of a token file share a fingerprint.

  Reads the file in blocks: the process holds 8 bytes per token, not the
  tokens.
  """
  fingerprints = np.empty([vocabulary_file.count_lines(tokens_path)], np.int64)
  filled = 0
  for block in vocabulary_file.line_blocks(tokens_path):
    lines = tf.raw_ops.StringSplitV2(input=[block], sep='\n').values[:-1]
    hashed = keys(lines).numpy()
    fingerprints[filled:filled + hashed.shape[0]] = hashed
    filled += hashed.shape[0]
  fingerprints.sort()
  return bool(np.any(fingerprints[1:] == fingerprints[:-1]))
