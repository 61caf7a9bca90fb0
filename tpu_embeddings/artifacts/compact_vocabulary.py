"""A vocabulary held in a few arrays instead of a Python object per token.

`vocabulary_file.read` gives a Python string and int per token, and its
`ids` a dict entry: at 10M tokens about 2 GiB, most of what a reader of a
10M-row table can spare. `CompactVocabulary` keeps

* the tokens' UTF-8 bytes, newline-separated, and where each line ends;
* the counts, int64;
* the tokens' 63-bit fingerprints (`token_ids.keys`), sorted, with the
  row of each: a lookup hashes the token, finds its fingerprint and
  compares the bytes, so a fingerprint shared by two tokens never maps one
  to the other's row.

That is about 30 bytes per token besides the token's own bytes. It is a
sequence of the tokens (`len`, indexing, iteration, `in`), so code written
for `TokenCounts.tokens` reads it unchanged; `rows` and `ids_of` look many
tokens up at once.
"""

import collections.abc
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np

from tpu_embeddings.artifacts import vocabulary_file

# Tokens hashed per TensorFlow call.
_HASH_BATCH = 1 << 16


def _fingerprints(tokens: Sequence[bytes]) -> np.ndarray:
  import tensorflow as tf

  from tpu_embeddings.artifacts import token_ids
  out = np.empty([len(tokens)], np.int64)
  for start in range(0, len(tokens), _HASH_BATCH):
    batch = tokens[start:start + _HASH_BATCH]
    out[start:start + len(batch)] = token_ids.keys(
        tf.constant(batch, tf.string)).numpy()
  return out


def _block_fingerprints(lines: bytes) -> np.ndarray:
  """Fingerprints of a block of newline-terminated tokens."""
  import tensorflow as tf

  from tpu_embeddings.artifacts import token_ids
  tokens = tf.raw_ops.StringSplitV2(input=[lines], sep='\n').values[:-1]
  return token_ids.keys(tokens).numpy()


class CompactVocabulary(collections.abc.Sequence):
  """A vocabulary's tokens (row order) and counts, compactly (module doc)."""

  def __init__(self, lines: bytes, counts: np.ndarray,
               fingerprints: np.ndarray, ends: Optional[np.ndarray] = None):
    """`lines`: every token followed by a newline (bytes or a bytearray);
    `fingerprints`: theirs; `ends`: where each newline is, if known."""
    self._lines = lines
    self._ends = (np.flatnonzero(np.frombuffer(lines, np.uint8) == ord('\n'))
                  if ends is None else ends)
    self.counts = np.asarray(counts, np.int64)
    if not self._ends.size == self.counts.size == fingerprints.size:
      raise ValueError(f'{self._ends.size} tokens, {self.counts.size} counts '
                       f'and {fingerprints.size} fingerprints')
    order = np.argsort(fingerprints, kind='stable')
    self._sorted = fingerprints[order]
    self._rows = order.astype(np.int32 if order.size < 2**31 else np.int64)

  @classmethod
  def read(cls, directory_or_file: str) -> 'CompactVocabulary':
    """`vocabulary.tsv`, checked as `vocabulary_file.read` checks it, read
    in blocks into arrays sized once (no table-sized temporaries)."""
    size = vocabulary_file.count_lines(
        vocabulary_file.path_of(directory_or_file))
    lines = bytearray()
    counts = np.empty([size], np.int64)
    fingerprints = np.empty([size], np.int64)
    ends = np.empty([size], np.int64)
    n = 0
    for tokens, block_counts in vocabulary_file.checked_blocks(
        directory_or_file):
      found = np.flatnonzero(np.frombuffer(tokens, np.uint8) == ord('\n'))
      if n + found.size > size:
        raise vocabulary_file.VocabularyError(
            f'vocabulary: {directory_or_file} changed while it was read')
      ends[n:n + found.size] = found + len(lines)
      counts[n:n + found.size] = np.array(block_counts.split()).astype(
          np.int64)
      fingerprints[n:n + found.size] = _block_fingerprints(tokens)
      lines += tokens
      n += found.size
    if n != size:
      raise vocabulary_file.VocabularyError(
          f'vocabulary: {directory_or_file} changed while it was read')
    return cls(lines, counts, fingerprints, ends)

  @classmethod
  def from_tokens(cls, tokens: Iterable[str],
                  counts: Sequence[int] = ()) -> 'CompactVocabulary':
    """From tokens in row order (counts default to 0)."""
    encoded = [t.encode('utf-8') for t in tokens]
    counts = np.asarray(counts if len(counts) else np.zeros(len(encoded)),
                        np.int64)
    return cls(b''.join(t + b'\n' for t in encoded), counts,
               _fingerprints(encoded))

  def __len__(self) -> int:
    return int(self._ends.size)

  def _bytes(self, row: int) -> bytes:
    start = int(self._ends[row - 1]) + 1 if row else 0
    return bytes(self._lines[start:int(self._ends[row])])

  def __getitem__(self, index: Union[int, slice]) -> Union[str, List[str]]:
    if isinstance(index, slice):
      return [self[i] for i in range(*index.indices(len(self)))]
    row = int(index)
    if row < 0:
      row += len(self)
    if not 0 <= row < len(self):
      raise IndexError(f'row {index} of a {len(self)}-token vocabulary')
    return self._bytes(row).decode('utf-8')

  def __iter__(self) -> Iterator[str]:
    return (self[i] for i in range(len(self)))

  def __contains__(self, token) -> bool:
    return isinstance(token, str) and self.rows([token])[0] >= 0

  def same_tokens(self, other) -> bool:
    """Whether `other` (a CompactVocabulary) holds the same tokens in the
    same order."""
    return (isinstance(other, CompactVocabulary) and
            self._lines == other._lines)

  def rows(self, tokens: Sequence[Union[str, bytes]]) -> np.ndarray:
    """The row of each token (int64), -1 for a token not in the vocabulary.
    """
    encoded = [t.encode('utf-8') if isinstance(t, str) else bytes(t)
               for t in tokens]
    out = np.full([len(encoded)], -1, np.int64)
    if not encoded:
      return out
    wanted = _fingerprints(encoded)
    first = np.searchsorted(self._sorted, wanted, side='left')
    last = np.searchsorted(self._sorted, wanted, side='right')
    for i in np.flatnonzero(last > first):
      # Usually one candidate; more only where tokens share a fingerprint.
      for row in self._rows[first[i]:last[i]]:
        if self._bytes(int(row)) == encoded[i]:
          out[i] = row
          break
    return out

  def ids_of(self, words: Iterable[str]) -> Dict[str, int]:
    """{word: row} of the given words that are tokens (others left out)."""
    words = sorted(set(words))
    return {w: int(r) for w, r in zip(words, self.rows(words)) if r >= 0}

  # What a `TokenCounts` offers, for code given either (a module's `ctx`).
  @property
  def tokens(self) -> 'CompactVocabulary':
    """The tokens in row order: this vocabulary itself (no list is made)."""
    return self

  @property
  def ids(self) -> Dict[str, int]:
    """{token: row} of every token (a Python object per token)."""
    return {t: i for i, t in enumerate(self)}

  def token_counts(self) -> vocabulary_file.TokenCounts:
    """As `vocabulary_file.read` returns it (a Python object per token)."""
    return vocabulary_file.TokenCounts(tuple(self),
                                       tuple(int(c) for c in self.counts))
