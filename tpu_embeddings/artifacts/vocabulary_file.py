"""The vocabulary artifact format and the one place ids and OOV are defined.

`vocabulary.tsv` holds one `token<TAB>count` line per token, ordered by count
descending then token ascending (bytewise UTF-8). Line i (0-based) is table row
i: there are no reserved rows in a trained table.

Out-of-vocabulary tokens:
* training drops them from sequences before windows are formed, so they are
  never looked up and never update a row;
* exports map them to zero vectors (the Hub module appends OOV bucket rows
  filled with zeros; the serving SavedModel masks id -1), so an OOV token adds
  nothing to a sentence embedding.
"""

import dataclasses
import re
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

VOCABULARY_FILENAME = 'vocabulary.tsv'
# Plain token list (one per line, row order) written into exports as an asset.
TOKENS_ASSET_FILENAME = 'vocabulary.txt'
OOV_ID = -1
# Bytes per block when streaming files (checked_blocks, line_blocks): a
# block's string tensors and arrays cost tens of bytes per token.
_BLOCK_BYTES = 4 << 20
# A block of well-formed lines (RE2 syntax, for tf.strings.regex_full_match).
_VALID_LINES = '(?s)([^\t\n]+\t[0-9]+\n)*'


class VocabularyError(ValueError):
  pass


@dataclasses.dataclass(frozen=True)
class TokenCounts:
  tokens: Tuple[str, ...]
  counts: Tuple[int, ...]

  def __len__(self):
    return len(self.tokens)

  @property
  def ids(self) -> Dict[str, int]:
    return {t: i for i, t in enumerate(self.tokens)}


def sort_key(item: Tuple[str, int]):
  token, count = item
  return (-count, token.encode('utf-8'))


def from_counts(counts: Dict[str, int], min_count: int = 1,
                max_tokens: int = 0) -> TokenCounts:
  """Applies `min_count` and `max_tokens` (0 = no cap) in the canonical order.
  """
  items = sorted(((t, c) for t, c in counts.items() if c >= min_count),
                 key=sort_key)
  if max_tokens:
    items = items[:max_tokens]
  return TokenCounts(tuple(t for t, _ in items), tuple(c for _, c in items))


def write_counts(directory: str, table, min_count: int = 1,
                 max_tokens: int = 0) -> int:
  """`write(directory, from_counts(...))` for counts in an Arrow table
  (`values`: UTF-8 binary, `counts`: int64, one row per token), sorted and
  formatted by Arrow: no Python object per token. Returns the tokens kept."""
  import numpy as np
  import pyarrow as pa
  import pyarrow.compute as pc
  import tensorflow as tf
  table = table.filter(pc.greater_equal(table['counts'], min_count))
  order = pc.sort_indices(table, sort_keys=[('counts', 'descending'),
                                            ('values', 'ascending')])
  if max_tokens:
    order = order[:max_tokens]
  table = table.take(order)
  tokens = table['values'].combine_chunks().cast(pa.string())  # checks UTF-8
  counts = pc.binary_join_element_wise(
      table['counts'].combine_chunks().cast(pa.string()), '', '\n')
  lines = pc.binary_join_element_wise(tokens, counts, '\t')
  text = b''
  if len(lines):
    _, offsets, data = lines.buffers()
    offsets = np.frombuffer(offsets, np.int32)[lines.offset:][[0, len(lines)]]
    text = data[int(offsets[0]):int(offsets[1])].to_pybytes()
  tf.io.gfile.makedirs(directory)
  with tf.io.gfile.GFile(f'{directory.rstrip("/")}/{VOCABULARY_FILENAME}',
                         'wb') as f:
    f.write(text)
  return len(lines)


def format_lines(items: Sequence[Tuple[str, int]]) -> List[str]:
  return [f'{t}\t{c}' for t, c in items]


# Lines formatted per write: a whole 10M-token file as one string would
# cost as much memory as the vocabulary itself.
_WRITE_LINES = 1 << 16


def write(directory: str, vocab: TokenCounts) -> str:
  import tensorflow as tf
  tf.io.gfile.makedirs(directory)
  path = f'{directory.rstrip("/")}/{VOCABULARY_FILENAME}'
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write('')  # GFile creates the file on its first write
    for start in range(0, len(vocab), _WRITE_LINES):
      stop = start + _WRITE_LINES
      f.write(''.join(l + '\n' for l in format_lines(zip(
          vocab.tokens[start:stop], vocab.counts[start:stop]))))
  return path


def write_tokens(path: str, vocab: TokenCounts):
  """Writes the one-token-per-line asset used by exports."""
  import tensorflow as tf
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write('')
    for start in range(0, len(vocab), _WRITE_LINES):
      f.write(''.join(t + '\n' for t in vocab.tokens[start:start +
                                                      _WRITE_LINES]))


def line_blocks(path: str, block_bytes: int = _BLOCK_BYTES) -> Iterator[bytes]:
  """The file's bytes in blocks of whole lines, each ending with a newline."""
  import tensorflow as tf
  rest = b''
  with tf.io.gfile.GFile(path, 'rb') as f:
    while True:
      chunk = f.read(block_bytes)
      if not chunk:
        break
      cut = chunk.rfind(b'\n') + 1
      if not cut:
        rest += chunk
        continue
      yield rest + chunk[:cut]
      rest = chunk[cut:]
  if rest:
    yield rest + b'\n'


def count_lines(path: str) -> int:
  """Lines of a text file (a last line without a newline counts)."""
  return sum(block.count(b'\n') for block in line_blocks(path))


def same_files(a: str, b: str, block_bytes: int = _BLOCK_BYTES) -> bool:
  """Whether two vocabularies (artifact directories or files) hold the same
  bytes; read in blocks, never whole."""
  import tensorflow as tf
  a, b = path_of(a), path_of(b)
  if tf.io.gfile.stat(a).length != tf.io.gfile.stat(b).length:
    return False
  with tf.io.gfile.GFile(a, 'rb') as fa, tf.io.gfile.GFile(b, 'rb') as fb:
    while True:
      block = fa.read(block_bytes)
      if block != fb.read(block_bytes):
        return False
      if not block:
        return True


def path_of(directory_or_file: str) -> str:
  """The `vocabulary.tsv` of an artifact directory, or the file given."""
  import tensorflow as tf
  path = directory_or_file
  if tf.io.gfile.isdir(path):
    path = f'{path.rstrip("/")}/{VOCABULARY_FILENAME}'
  if not tf.io.gfile.exists(path):
    raise VocabularyError(f'vocabulary: no {VOCABULARY_FILENAME} at {path}')
  return path


# A good `token<TAB>count` line of `read` (CRLF too); others go through
# `_parse_line`.
_LINE = re.compile(r'^([^\t\n]+)\t([0-9]+)\r?$', re.MULTILINE)


def _parse_line(path: str, n: int, raw: bytes) -> Tuple[str, int]:
  """(token, count) of one `vocabulary.tsv` line, or VocabularyError."""
  try:
    # `read` sees CRLF line ends as LF ones.
    line = raw.decode('utf-8').rstrip('\r\n')
  except UnicodeDecodeError as e:
    raise VocabularyError(
        f'vocabulary: {path} line {n}: not UTF-8 ({e.reason})') from e
  parts = line.split('\t')
  if len(parts) != 2 or not parts[0] or not parts[1].isdigit():
    raise VocabularyError(
        f'vocabulary: {path} line {n}: expected "token<TAB>count", got '
        f'{line[:80]!r}')
  return parts[0], int(parts[1])


def _split_counts(block: bytes) -> Tuple[bytes, bytes]:
  """`token<TAB>count<LF>` lines (one tab per line) -> (`token<LF>` lines,
  `count<LF>` lines)."""
  import numpy as np
  chars = np.frombuffer(block, np.uint8)
  # 1 from a line's tab up to its newline, 0 elsewhere.
  inside = np.zeros(len(chars), np.int8)
  tabs = chars == ord('\t')
  newlines = chars == ord('\n')
  inside[tabs] = 1
  inside[newlines] = -1
  np.cumsum(inside, out=inside)
  tokens = chars[inside == 0].tobytes()
  counts = chars[((inside == 1) & ~tabs) | newlines].tobytes()
  return tokens, counts


def checked_blocks(directory_or_file: str, block_bytes: int = _BLOCK_BYTES
                   ) -> Iterator[Tuple[bytes, bytes]]:
  """`vocabulary.tsv` in blocks of whole lines, every line checked as `read`
  checks it: (the block's tokens, its counts), each one per line as bytes.

  No Python object per token, so a multi-million-token vocabulary costs a
  block of memory, not the vocabulary. VocabularyError names a bad line or
  an empty file.
  """
  import tensorflow as tf
  path = path_of(directory_or_file)
  count = 0
  for block in line_blocks(path, block_bytes):
    valid = bool(tf.strings.regex_full_match(block, _VALID_LINES).numpy())
    if valid:
      try:
        block.decode('utf-8')
      except UnicodeDecodeError:
        valid = False
    if valid:
      yield _split_counts(block)
    else:  # find the line to name, or accept what `read` accepts
      parsed = [_parse_line(path, count + i + 1, raw)
                for i, raw in enumerate(block.split(b'\n')[:-1])]
      yield (b''.join(t.encode('utf-8') + b'\n' for t, _ in parsed),
             b''.join(b'%d\n' % c for _, c in parsed))
    count += block.count(b'\n')
  if not count:
    raise VocabularyError(f'vocabulary: {path} is empty')


def lines_in_block(block: bytes, first: int, size: int,
                   wanted: Sequence[int]) -> Dict[int, str]:
  """{line: text} of the 0-based `wanted` lines in `size` lines from `first`."""
  inside = [w for w in wanted if first <= w < first + size]
  parts = block.split(b'\n') if inside else []
  return {w: parts[w - first].decode('utf-8', 'replace') for w in inside}


def write_tokens_asset(directory_or_file: str, tokens_path: str,
                       lines: Sequence[int] = (),
                       block_bytes: int = _BLOCK_BYTES,
                       on_block: Optional[Callable[[bytes], None]] = None
                       ) -> Tuple[int, Dict[int, str]]:
  """Streams `vocabulary.tsv` into the one-token-per-line asset `tokens_path`.

  Checks every line as `read` does, but in blocks of whole lines and without
  building Python strings per token (`checked_blocks`), so a
  multi-million-token vocabulary costs a block of memory, not the
  vocabulary. `on_block`, if given, gets each block's tokens as written.

  Returns:
    (number of tokens, {line: token} for the requested 0-based `lines`).
  """
  import tensorflow as tf
  found, count = {}, 0
  with tf.io.gfile.GFile(tokens_path, 'wb') as out:
    for tokens, _ in checked_blocks(directory_or_file, block_bytes):
      size = tokens.count(b'\n')
      found.update(lines_in_block(tokens, count, size, lines))
      out.write(tokens)
      if on_block is not None:
        on_block(tokens)
      count += size
  return count, found


def read(directory_or_file: str) -> TokenCounts:
  """Reads `vocabulary.tsv` from an artifact directory or a file path."""
  path = path_of(directory_or_file)
  tokens, counts = [], []
  # Blocks of lines, each parsed by one regular expression; a block where
  # it does not match every line is parsed line by line, for the error.
  for block in line_blocks(path):
    try:
      found = _LINE.findall(block.decode('utf-8'))
    except UnicodeDecodeError:
      found = []
    if len(found) != block.count(b'\n'):
      found = [_parse_line(path, len(tokens) + i + 1, raw)
               for i, raw in enumerate(block.split(b'\n')[:-1])]
    tokens.extend(token for token, _ in found)
    counts.extend(int(count) for _, count in found)
  if not tokens:
    raise VocabularyError(f'vocabulary: {path} is empty')
  return TokenCounts(tuple(tokens), tuple(counts))
