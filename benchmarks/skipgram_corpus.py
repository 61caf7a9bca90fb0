"""Token corpora written the ways the trainer and gensim read them.

`zipf_lines` generates lines of tokens `t<rank>` drawn from Zipf(1) over a
vocabulary of `vocabulary_size`, lengths uniform in [min_length,
max_length]. `write` writes lines as an Examples artifact (`Split-train/`,
the trainer's input; with `eval_every` = n, every n-th line goes to
`Split-eval/` instead), the train lines as a text file (one line per
sequence, what gensim reads), and returns the vocabulary counted from the
train lines, most frequent first (what VocabularyGen would write).
"""

import collections
import contextlib
import dataclasses
import os
from typing import Iterable, Iterator, List

import numpy as np


@dataclasses.dataclass(frozen=True)
class Corpus:
  examples_uri: str
  text_file: str
  tokens: List[str]   # vocabulary, most frequent first
  counts: List[int]
  sequences: int
  total_tokens: int


def zipf_lines(total_tokens: int, min_length: int, max_length: int,
               vocabulary_size: int = 30_000,
               seed: int = 0) -> Iterator[List[str]]:
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
      yield [f't{i}' for i in line]


def text_lines(path: str) -> Iterator[List[str]]:
  with open(path, encoding='utf-8') as f:
    for line in f:
      yield line.split()


def read_text(path: str) -> List[List[str]]:
  return list(text_lines(path))


def write(directory: str, lines: Iterable[List[str]],
          eval_every: int = 0) -> Corpus:
  """Writes `lines` under `directory`."""
  import tensorflow as tf

  from tpu_embeddings.artifacts import examples_io
  examples_uri = os.path.join(directory, 'examples')
  text_file = os.path.join(directory, 'corpus.txt')
  counts = collections.Counter()
  sequences = 0

  def records(split):
    os.makedirs(os.path.join(examples_uri, f'Split-{split}'), exist_ok=True)
    return tf.io.TFRecordWriter(
        os.path.join(examples_uri, f'Split-{split}', 'data-00000.gz'),
        tf.io.TFRecordOptions(compression_type='GZIP'))

  with contextlib.ExitStack() as files:
    train = files.enter_context(records('train'))
    held_out = files.enter_context(records('eval')) if eval_every else None
    text = files.enter_context(open(text_file, 'w', encoding='utf-8'))
    for n, tokens in enumerate(lines):
      record = examples_io.make_example(tokens).SerializeToString()
      if eval_every and n % eval_every == eval_every - 1:
        held_out.write(record)
        continue
      train.write(record)
      text.write(' '.join(tokens) + '\n')
      counts.update(tokens)
      sequences += 1
  vocabulary = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
  return Corpus(examples_uri, text_file, [t for t, _ in vocabulary],
                [c for _, c in vocabulary], sequences, sum(counts.values()))
