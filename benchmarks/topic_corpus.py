"""A corpus of millions of distinct tokens with topic structure.

    python -m benchmarks.topic_corpus --out DIR --rows 2200000
        --tokens 16000000 [--topics 32] [--seed 0]

Token `t<topic>-<j>` is the j-th most frequent token of its topic. Every
line belongs to one topic and draws its 10-30 tokens from it: with
probability `head_share` by Zipf(1) over the topic's tokens (a few
frequent words), else uniformly (so that every one of millions of tokens
is seen a few times and `vocabulary.min_count=1` keeps most of them).

`write_spans` writes text span folders for `python -m pipelines run`
(`span-1/` train, the pipeline splits off its own eval share);
`write_vocabulary` and `write_examples` write the Vocabulary and Examples
artifacts directly, for benchmarks that run one component at a time.
"""

import argparse
import os
from typing import Iterator, List, Tuple

import numpy as np

TOPICS = 32
HEAD_SHARE = 0.5
MIN_LENGTH, MAX_LENGTH = 10, 30


def token(topic: int, j: int) -> str:
  return f't{topic}-{j}'


def topic_of(name: str) -> int:
  """The topic of token `t<topic>-<j>`."""
  return int(name[1:name.index('-')])


def per_topic(rows: int, topics: int = TOPICS) -> int:
  return -(-rows // topics)


def ranked_tokens(rows: int, topics: int = TOPICS
                  ) -> Iterator[Tuple[int, int]]:
  """(topic, j) of `rows` tokens, most frequent first (by `expected_count`).
  """
  n = 0
  for j in range(per_topic(rows, topics)):
    for t in range(topics):
      if n == rows:
        return
      yield t, j
      n += 1


def expected_count(j: int, rows: int, tokens: int, topics: int = TOPICS,
                   head_share: float = HEAD_SHARE) -> int:
  """Expected occurrences of a topic's j-th token in `tokens` (at least 1)."""
  n = per_topic(rows, topics)
  per = tokens / topics
  head = head_share * per / ((j + 1) * (np.log(n) + 0.5772))
  return max(1, int(round(head + (1 - head_share) * per / n)))


def lines(rows: int, tokens: int, topics: int = TOPICS, seed: int = 0,
          head_share: float = HEAD_SHARE) -> Iterator[List[str]]:
  """Lines of about `tokens` tokens in total over a `rows`-token vocabulary.
  """
  rng = np.random.default_rng(seed)
  n = per_topic(rows, topics)
  zipf = np.cumsum(1.0 / np.arange(1, n + 1))
  zipf /= zipf[-1]
  written = 0
  while written < tokens:
    lengths = rng.integers(MIN_LENGTH, MAX_LENGTH + 1, 4096)
    topic = rng.integers(0, topics, lengths.size)
    total = int(lengths.sum())
    head = rng.random(total) < head_share
    j = np.where(head, np.searchsorted(zipf, rng.random(total)),
                 rng.integers(0, n, total))
    j = np.minimum(j, n - 1)
    for t, line in zip(topic, np.split(j, np.cumsum(lengths)[:-1])):
      if written >= tokens:
        return
      # The last topic may hold fewer tokens when topics do not divide rows.
      line = line[line * topics + t < rows]
      written += len(line)
      yield [token(int(t), int(x)) for x in line]


def write_spans(out: str, rows: int, tokens: int, topics: int = TOPICS,
                seed: int = 0) -> str:
  """`out/span-1/corpus-*.txt` (files of about a million tokens each)."""
  span = os.path.join(out, 'span-1')
  os.makedirs(span, exist_ok=False)
  f, in_file, part = None, 0, 0
  try:
    for line in lines(rows, tokens, topics, seed):
      if f is None or in_file >= 1_000_000:
        if f is not None:
          f.close()
        f = open(os.path.join(span, f'corpus-{part:05d}.txt'), 'w',
                 encoding='utf-8')
        part, in_file = part + 1, 0
      f.write(' '.join(line) + '\n')
      in_file += len(line)
  finally:
    if f is not None:
      f.close()
  return span


def write_vocabulary(uri: str, rows: int, tokens: int,
                     topics: int = TOPICS) -> str:
  """A Vocabulary artifact of all `rows` tokens with their expected counts,
  streamed (10M tokens as Python strings would cost about a GiB)."""
  from tpu_embeddings.artifacts import vocabulary_file
  os.makedirs(uri, exist_ok=True)
  with open(os.path.join(uri, vocabulary_file.VOCABULARY_FILENAME), 'w',
            encoding='utf-8') as f:
    for t, j in ranked_tokens(rows, topics):
      f.write(f'{token(t, j)}\t{expected_count(j, rows, tokens, topics)}\n')
  return uri


def write_examples(uri: str, rows: int, splits, topics: int = TOPICS,
                   seed: int = 0) -> str:
  """An Examples artifact: {split: tokens} of lines from `lines`."""
  import tensorflow as tf

  from tpu_embeddings.artifacts import examples_io
  for n, (split, tokens) in enumerate(sorted(splits.items())):
    directory = os.path.join(uri, f'Split-{split}')
    os.makedirs(directory, exist_ok=True)
    with tf.io.TFRecordWriter(
        os.path.join(directory, 'data_tfrecord-00000-of-00001.gz'),
        tf.io.TFRecordOptions(compression_type='GZIP')) as w:
      for line in lines(rows, tokens, topics, seed + 1 + n):
        w.write(examples_io.make_example(line).SerializeToString())
  return uri


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--out', required=True, help='data root to create')
  parser.add_argument('--rows', type=int, default=2_200_000,
                      help='distinct tokens the corpus draws from')
  parser.add_argument('--tokens', type=int, default=16_000_000)
  parser.add_argument('--topics', type=int, default=TOPICS)
  parser.add_argument('--seed', type=int, default=0)
  args = parser.parse_args(argv)
  print(write_spans(args.out, args.rows, args.tokens, args.topics, args.seed))


if __name__ == '__main__':
  main()
