"""Token -> table row, shared by the serving SavedModel and the Hub module.

Both exports find a token's row by its 63-bit fingerprint
(`tf.strings.to_hash_bucket_fast`) in a sorted array of the vocabulary's
fingerprints (`SortedKeys`), computed once at export and saved with the
export's variables: a load reads 16 bytes per token and builds nothing (a
hash table built from the asset at load held about 44 bytes per token, and
twice that while it was built). Each value packs the row id (low `ID_BITS`)
with a second, independent 31-bit hash of the token
(`tf.strings.to_hash_bucket`), which `decode` compares against the query's:
an OOV token whose fingerprint equals a vocabulary token's is still OOV
(chance about vocabulary size / 2**94 per token). A vocabulary in which two
tokens share a fingerprint (`SortedKeys.collide`) is served from a plain
string-keyed table instead.
"""

import dataclasses
from typing import Any, Optional, Tuple

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


def decode(found: tf.Tensor, tokens: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """`(ids, known)` from the values a lookup of `keys(tokens)` returned:
  each packs a row id (low `ID_BITS`) and its token's check hash.

  The lookup's default value must be `MISSING`. OOV tokens get id 0.
  """
  ids = tf.bitwise.bitwise_and(found, tf.constant(_ID_MASK, tf.int64))
  known = tf.equal(
      tf.bitwise.right_shift(found, tf.constant(ID_BITS, tf.int64)),
      tf.strings.to_hash_bucket(tokens, CHECK_BUCKETS))
  return ids, known


@dataclasses.dataclass(frozen=True)
class SortedKeys:
  """A vocabulary's lookup arrays: `keys` (int64 [size]) its tokens'
  fingerprints in ascending order, `values` (int64 [size]) each one's row
  id and check hash (`decode`), in the same order; numpy arrays, or
  tf.Variables (`in_variables`). `collide`: two tokens share a fingerprint
  (the same token twice does), so their rows cannot be told apart by it."""
  keys: Any
  values: Any
  collide: bool

  def in_variables(self) -> 'SortedKeys':
    """The same arrays in two tf.Variables, which both exports can save
    without copying them again (each numpy array is copied once; as a
    tensor it would be copied twice)."""
    if isinstance(self.keys, tf.Variable):
      return self
    return SortedKeys(
        tf.Variable(self.keys, trainable=False, name='token_keys'),
        tf.Variable(self.values, trainable=False, name='token_values'),
        self.collide)


class KeysBuilder:
  """`SortedKeys` of a token file, built from its blocks of whole lines
  (`add`, e.g. as they are written) in arrays sized once: 16 bytes a
  token, 32 while they are sorted (`sorted`)."""

  def __init__(self, size: int):
    """`size`: tokens expected; `add` ignores any beyond them (the caller
    compares the file's count with `size` before `sorted`)."""
    self._fingerprints = np.empty([size], np.int64)
    self._checks = np.empty([size], np.int64)
    self._filled = 0

  def add(self, block: bytes):
    """Hashes a block of newline-terminated tokens."""
    room = self._fingerprints.size - self._filled
    if room <= 0:
      return
    lines = tf.raw_ops.StringSplitV2(input=[block], sep='\n').values[:-1]
    lines = lines[:room]
    end = self._filled + int(lines.shape[0])
    self._fingerprints[self._filled:end] = keys(lines).numpy()
    self._checks[self._filled:end] = tf.strings.to_hash_bucket(
        lines, CHECK_BUCKETS).numpy()
    self._filled = end

  def sorted(self) -> SortedKeys:
    """The `SortedKeys` of every token added; ValueError unless `size`."""
    if self._filled != self._fingerprints.size:
      raise ValueError(f'token keys: {self._filled} tokens hashed, '
                       f'{self._fingerprints.size} expected')
    fingerprints, checks = self._fingerprints, self._checks
    self._fingerprints = self._checks = np.empty([0], np.int64)
    # Equal keys' order does not matter: a vocabulary with any is served by
    # the string-keyed table (`collide`). Quicksort takes half of a stable
    # sort's time on 10M keys.
    order = np.argsort(fingerprints)
    fingerprints = fingerprints[order]
    checks = checks[order]
    np.left_shift(checks, ID_BITS, out=checks)
    np.bitwise_or(checks, order, out=checks)
    return SortedKeys(keys=fingerprints, values=checks,
                      collide=bool(np.any(fingerprints[1:] ==
                                          fingerprints[:-1])))


def sorted_keys(tokens_path: str) -> SortedKeys:
  """The `SortedKeys` of a one-token-per-line file, read in blocks: the
  process holds about 32 bytes per token while sorting, never the tokens."""
  builder = KeysBuilder(vocabulary_file.count_lines(tokens_path))
  for block in vocabulary_file.line_blocks(tokens_path):
    builder.add(block)
  return builder.sorted()


def lookup_keys(tokens_path: str, token_keys: Optional[SortedKeys] = None,
                keyed_by_string: bool = False) -> Optional[SortedKeys]:
  """What an export's token lookup is built from: the token file's
  `SortedKeys` (`token_keys` if already known), or None for a table keyed
  by the token strings, when `keyed_by_string` or two tokens share a
  fingerprint."""
  if keyed_by_string:
    return None
  if token_keys is None:
    token_keys = sorted_keys(tokens_path)
  return None if token_keys.collide else token_keys


def find(sorted_fingerprints: tf.Tensor, values: tf.Tensor,
         tokens: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """`(ids, known)` of [n] `tokens` in a vocabulary's `SortedKeys` (as
  tensors, [size] each; size >= 1): a binary search for each fingerprint,
  then `decode`. OOV tokens get id 0."""
  wanted = keys(tokens)
  at = tf.searchsorted(sorted_fingerprints, wanted, out_type=tf.int64)
  at = tf.minimum(at, tf.size(sorted_fingerprints, out_type=tf.int64) - 1)
  hit = tf.equal(tf.gather(sorted_fingerprints, at), wanted)
  found = tf.where(hit, tf.gather(values, at),
                   tf.constant(MISSING, tf.int64))
  return decode(found, tokens)
