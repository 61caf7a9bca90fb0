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
from typing import Dict, List, Sequence, Tuple

VOCABULARY_FILENAME = 'vocabulary.tsv'
# Plain token list (one per line, row order) written into exports as an asset.
TOKENS_ASSET_FILENAME = 'vocabulary.txt'
OOV_ID = -1


class VocabularyError(ValueError):
  pass


@dataclasses.dataclass(frozen=True)
class Vocabulary:
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
                max_tokens: int = 0) -> Vocabulary:
  """Applies `min_count` and `max_tokens` (0 = no cap) in the canonical order."""
  items = sorted(((t, c) for t, c in counts.items() if c >= min_count),
                 key=sort_key)
  if max_tokens:
    items = items[:max_tokens]
  return Vocabulary(tuple(t for t, _ in items), tuple(c for _, c in items))


def format_lines(items: Sequence[Tuple[str, int]]) -> List[str]:
  return [f'{t}\t{c}' for t, c in items]


def write(directory: str, vocab: Vocabulary) -> str:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.io.gfile.makedirs(directory)
  path = f'{directory.rstrip("/")}/{VOCABULARY_FILENAME}'
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write(''.join(l + '\n' for l in format_lines(zip(vocab.tokens,
                                                         vocab.counts))))
  return path


def write_tokens(path: str, vocab: Vocabulary):
  """Writes the one-token-per-line asset used by exports."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write(''.join(t + '\n' for t in vocab.tokens))


def read(directory_or_file: str) -> Vocabulary:
  """Reads `vocabulary.tsv` from an artifact directory or a file path."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = directory_or_file
  if tf.io.gfile.isdir(path):
    path = f'{path.rstrip("/")}/{VOCABULARY_FILENAME}'
  if not tf.io.gfile.exists(path):
    raise VocabularyError(f'vocabulary: no {VOCABULARY_FILENAME} at {path}')
  tokens, counts = [], []
  with tf.io.gfile.GFile(path, 'rb') as f:
    for n, raw in enumerate(f, start=1):
      line = raw.decode('utf-8').rstrip('\n')
      parts = line.split('\t')
      if len(parts) != 2 or not parts[0] or not parts[1].isdigit():
        raise VocabularyError(
            f'vocabulary: {path} line {n}: expected "token<TAB>count", got '
            f'{line[:80]!r}')
      tokens.append(parts[0])
      counts.append(int(parts[1]))
  if not tokens:
    raise VocabularyError(f'vocabulary: {path} is empty')
  return Vocabulary(tuple(tokens), tuple(counts))
