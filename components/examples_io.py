"""Reading token sequences from an `Examples` artifact.

The corpus ExampleGen writes TFX's layout: `<uri>/Split-<name>/*.gz`, gzipped
TFRecords of `tf.train.Example` with one bytes-list feature `tokens`.
"""

from typing import Iterator, List

import tensorflow as tf

TOKENS_FEATURE = 'tokens'


def split_files(examples_uri: str, split: str) -> List[str]:
  pattern = f'{examples_uri.rstrip("/")}/Split-{split}/*'
  files = sorted(tf.io.gfile.glob(pattern))
  if not files:
    raise FileNotFoundError(
        f'examples {examples_uri}: no files for split {split!r} ({pattern})')
  return files


def token_dataset(examples_uri: str, split: str) -> tf.data.Dataset:
  """Dataset of 1-D string tensors, one per sequence."""
  files = split_files(examples_uri, split)
  spec = {TOKENS_FEATURE: tf.io.VarLenFeature(tf.string)}
  return tf.data.TFRecordDataset(files, compression_type='GZIP').map(
      lambda r: tf.sparse.to_dense(
          tf.io.parse_single_example(r, spec)[TOKENS_FEATURE]))


def read_sequences(examples_uri: str, split: str) -> Iterator[List[str]]:
  """Python iterator over token lists (for validation and tests)."""
  for tokens in token_dataset(examples_uri, split).as_numpy_iterator():
    yield [t.decode('utf-8') for t in tokens]


def make_example(tokens: List[str]) -> tf.train.Example:
  return tf.train.Example(features=tf.train.Features(feature={
      TOKENS_FEATURE: tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[t.encode('utf-8') for t in tokens]))
  }))
