"""A table's canary: inputs of the load check and the outputs its exports
must give them (checked by `table_check`).

A canary is a few vocabulary tokens (the table's first, middle and last rows),
an OOV token and "", and sentences built from them that exercise the sqrtn
combiner; its expected outputs are computed with numpy from the table rows.
"""

import collections.abc
import dataclasses
import json
from typing import Callable, Dict, List, Sequence

import numpy as np

from tpu_embeddings.core import text


@dataclasses.dataclass
class Canary:
  """Tokens and sentences, and their embeddings computed from table rows."""
  FORMAT = 'table'

  tokens: List[str]
  token_embeddings: np.ndarray     # [len(tokens), dim]
  sentences: List[str]
  sentence_embeddings: np.ndarray  # [len(sentences), dim]

  def save(self, path: str):
    # Strings as JSON text, not numpy string arrays: those drop trailing NUL
    # characters, which turned a token such as "a\0" into an OOV "a".
    np.savez(path, tokens=np.array(json.dumps(self.tokens)),
             token_embeddings=self.token_embeddings,
             sentences=np.array(json.dumps(self.sentences)),
             sentence_embeddings=self.sentence_embeddings)

  @classmethod
  def load(cls, path: str) -> 'Canary':
    with np.load(path) as d:
      return cls(json.loads(str(d['tokens'])), d['token_embeddings'],
                 json.loads(str(d['sentences'])), d['sentence_embeddings'])


class TokenFile(collections.abc.Sequence):
  """A one-token-per-line file as the `tokens` of `make_canary`.

  Only the lines in `known` ({line: token}, e.g. from
  `vocabulary_file.write_tokens_asset`) can be indexed; `in` scans the file
  block by block. Nothing per token is held in memory.
  """

  def __init__(self, path: str, size: int, known: Dict[int, str]):
    self._path, self._size, self._known = path, size, dict(known)

  def __len__(self) -> int:
    return self._size

  def __getitem__(self, i: int) -> str:
    i = i + self._size if i < 0 else i
    if i not in self._known:
      raise IndexError(f'{self._path}: line {i} was not read')
    return self._known[i]

  def __contains__(self, token) -> bool:
    from tpu_embeddings.artifacts import vocabulary_file
    line = b'\n' + token.encode('utf-8') + b'\n'
    return any(line in b'\n' + block
               for block in vocabulary_file.line_blocks(self._path))


def picked_rows(size: int) -> List[int]:
  """The rows a canary of a `size`-row table holds: first, middle, last."""
  return sorted({0, size // 2, size - 1})


def expected_lines(canary: Canary, size: int) -> Dict[int, str]:
  """{row: token} that a `size`-token vocabulary file of `canary`'s table
  holds at `picked_rows(size)`."""
  picks = picked_rows(size)
  first, _, _, middle, last = canary.tokens
  return {picks[0]: first, picks[len(picks) // 2]: middle, picks[-1]: last}


def lines_at(path: str, lines: Sequence[int]) -> Dict[int, str]:
  """{line: its text} of a text file's 0-based `lines` that it has, read in
  blocks."""
  from tpu_embeddings.artifacts import vocabulary_file
  found, count = {}, 0
  for block in vocabulary_file.line_blocks(path):
    size = block.count(b'\n')
    found.update(vocabulary_file.lines_in_block(block, count, size, lines))
    count += size
  return found


def make_canary(tokens: Sequence[str],
                read_rows: Callable[[int, int], np.ndarray]) -> Canary:
  """Canary inputs and expected outputs for a table whose row i is tokens[i].

  `read_rows(start, stop)` returns table rows; only the few canary rows are
  read.
  """
  size = len(tokens)
  picks = picked_rows(size)
  rows = {i: np.asarray(read_rows(i, i + 1), np.float32)[0] for i in picks}
  dim = rows[0].shape[0]
  oov = 'oov-canary'
  while oov in tokens:  # only a scan in the unlikely case it is a token
    oov += '-'
  vector = {tokens[i]: rows[i] for i in picks}
  zero = np.zeros([dim], np.float32)
  embed = lambda t: vector.get(t, zero)

  def sqrtn(sentence):
    # The exports' tokenizer: ASCII whitespace only. str.split() would also
    # split at NBSP, U+2028 and other Unicode spaces inside a token.
    parts = text.tokenize(sentence)
    if not parts:
      return zero
    return (np.sum([embed(t) for t in parts], axis=0, dtype=np.float32) /
            np.float32(np.sqrt(len(parts))))

  first, middle, last = (tokens[picks[0]], tokens[picks[len(picks) // 2]],
                         tokens[picks[-1]])
  canary_tokens = [first, oov, '', middle, last]
  sentences = [f'{first} {first}', '', f'{first} {oov}',
               f' {first}\t{middle} {last} ', oov]
  return Canary(canary_tokens,
                np.stack([embed(t) for t in canary_tokens]),
                sentences, np.stack([sqrtn(s) for s in sentences]))
