"""A generated token corpus written the ways the trainer and gensim read it.

Tokens `t<rank>` are drawn from Zipf(1) over a vocabulary of
`vocabulary_size`; line lengths are uniform in [min_length, max_length].
`write` writes the lines as an Examples artifact (`Split-train/`, the
trainer's input), as a text file (one line per sequence, what gensim reads)
and returns the vocabulary counted from the corpus itself, most frequent
first (what VocabularyGen would write).
"""

import dataclasses
import os
from typing import List

import numpy as np


@dataclasses.dataclass(frozen=True)
class Corpus:
  examples_uri: str
  text_file: str
  tokens: List[str]   # vocabulary, most frequent first
  counts: List[int]
  sequences: int
  total_tokens: int


def _lines(total_tokens: int, vocabulary_size: int, min_length: int,
           max_length: int, seed: int):
  rng = np.random.default_rng(seed)
  p = 1.0 / np.arange(1, vocabulary_size + 1)
  cdf = np.cumsum(p / p.sum())
  written = 0
  while written < total_tokens:
    lengths = rng.integers(min_length, max_length + 1, 4096)
    ids = np.searchsorted(cdf, rng.random(int(lengths.sum())))
    ids = np.minimum(ids, vocabulary_size - 1)
    for line in np.split(ids, np.cumsum(lengths)[:-1]):
      if written >= total_tokens:
        return
      written += len(line)
      yield line


def write(directory: str, total_tokens: int, min_length: int,
          max_length: int, vocabulary_size: int = 30_000,
          seed: int = 0) -> Corpus:
  """Writes the corpus under `directory`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  from tpu_embeddings.artifacts import examples_io  # pylint: disable=g-import-not-at-top
  examples_uri = os.path.join(directory, 'examples')
  text_file = os.path.join(directory, 'corpus.txt')
  split = os.path.join(examples_uri, 'Split-train')
  os.makedirs(split, exist_ok=True)
  counts = np.zeros(vocabulary_size, np.int64)
  sequences = 0
  options = tf.io.TFRecordOptions(compression_type='GZIP')
  with tf.io.TFRecordWriter(os.path.join(split, 'data-00000.gz'),
                            options) as records, \
      open(text_file, 'w', encoding='utf-8') as text:
    for line in _lines(total_tokens, vocabulary_size, min_length, max_length,
                       seed):
      tokens = [f't{i}' for i in line]
      records.write(examples_io.make_example(tokens).SerializeToString())
      text.write(' '.join(tokens) + '\n')
      np.add.at(counts, line, 1)
      sequences += 1
  order = [i for i in np.argsort(-counts, kind='stable') if counts[i]]
  return Corpus(examples_uri, text_file, [f't{i}' for i in order],
                [int(counts[i]) for i in order], sequences,
                int(counts.sum()))


def read_text(path: str) -> List[List[str]]:
  with open(path, encoding='utf-8') as f:
    return [line.split() for line in f]
