"""The validator's optional input files: similarity scores, related pairs and
analogy questions.

Both are read with `tf.io.gfile` (local or GCS), UTF-8; blank lines and
`#` comments are skipped; a bad line raises a one-line error naming the file
and the line. Fields are trimmed of ASCII whitespace only, the separators of
tokens (tpu_embeddings/core/text.py): a token may hold other Unicode spaces.
"""

import math
from typing import List, Tuple

import tensorflow as tf

from tpu_embeddings.core import text

_SPACE = text.ASCII_WHITESPACE


def _fields(line: str) -> List[str]:
  sep = '\t' if '\t' in line else ','
  return [f.strip(_SPACE) for f in line.split(sep)]


def read_similarity_file(path: str) -> List[Tuple[str, str, float]]:
  """WordSim-353 style "word1<TAB>word2<TAB>score" lines; a header is allowed.
  """
  triples = []
  for n, line in _lines(path):
    parts = _fields(line)
    if len(parts) < 3 or not parts[0] or not parts[1]:
      raise ValueError(f'similarity file {path} line {n}: expected '
                       f'"word1<TAB>word2<TAB>score", got {line[:80]!r}')
    try:
      score = float(parts[2])
    except ValueError:
      if n == 1 and not triples:
        continue  # header, e.g. "Word 1<TAB>Word 2<TAB>Human (mean)"
      raise ValueError(f'similarity file {path} line {n}: score '
                       f'{parts[2]!r} is not a number') from None
    if not math.isfinite(score):
      raise ValueError(f'similarity file {path} line {n}: score {score} is '
                       'not finite')
    triples.append((parts[0], parts[1], score))
  if not triples:
    raise ValueError(f'similarity file {path} has no scored pairs')
  return triples


def read_related_pairs(path: str) -> List[Tuple[str, str]]:
  """One "tokenA<TAB>tokenB" pair per line (extra columns ignored)."""
  pairs = []
  for n, line in _lines(path):
    parts = line.split('\t')
    if (len(parts) < 2 or not parts[0].strip(_SPACE)
        or not parts[1].strip(_SPACE)):
      raise ValueError(f'related-pairs file {path} line {n}: expected '
                       f'"tokenA<TAB>tokenB", got {line[:80]!r}')
    pairs.append((parts[0].strip(_SPACE), parts[1].strip(_SPACE)))
  if not pairs:
    raise ValueError(f'related-pairs file {path} has no pairs')
  return pairs


def read_analogy_file(path: str) -> List[Tuple[str, str, str, str]]:
  """Analogy questions "a b c d" (a is to b as c is to d), one per line;
  ": section" lines are headers (gensim's questions-words.txt format)."""
  questions = []
  for n, line in _lines(path):
    if line.startswith(':'):
      continue
    parts = line.split()
    if len(parts) != 4:
      raise ValueError(f'analogy file {path} line {n}: expected four words '
                       f'"a b c d" or a ": section" header, got {line[:80]!r}')
    questions.append(tuple(parts))
  if not questions:
    raise ValueError(f'analogy file {path} has no questions')
  return questions


def _lines(path: str):
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(f'{path} does not exist')
  with tf.io.gfile.GFile(path, 'rb') as f:
    for n, raw in enumerate(f, start=1):
      line = raw.decode('utf-8').rstrip('\r\n')
      if line.strip() and not line.lstrip().startswith('#'):
        yield n, line
