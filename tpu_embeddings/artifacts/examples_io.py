"""Reading token sequences from an `Examples` artifact.

The corpus ExampleGen writes TFX's layout: `<uri>/Split-<name>/*.gz`, gzipped
TFRecords of `tf.train.Example` with one bytes-list feature `tokens`. Beside
it, `<uri>/token_counts/Split-<name>/*.arrow` hold the split's token counts
(Arrow IPC files, columns `values` and `counts`, to be summed), so that the
Vocabulary need not read the records again; Examples from elsewhere may lack
them.
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


TOKEN_COUNTS_DIR = 'token_counts'


def token_counts_dir(examples_uri: str, split: str) -> str:
  return f'{examples_uri.rstrip("/")}/{TOKEN_COUNTS_DIR}/Split-{split}'


def token_count_files(examples_uri: str, split: str) -> List[str]:
  """The split's token count files; [] when the Examples have none."""
  return sorted(tf.io.gfile.glob(f'{token_counts_dir(examples_uri, split)}/'
                                 '*.arrow'))


def fold_counts(tables):
  """One Arrow table, one row per token, of the summed `counts` of `tables`
  (columns `values`: binary, `counts`: int64)."""
  import pyarrow as pa
  if len(tables) == 1:
    return tables[0]
  table = pa.concat_tables(tables).group_by('values').aggregate(
      [('counts', 'sum')])
  return pa.table({'values': table['values'], 'counts': table['counts_sum']})


def write_counts(path: str, table):
  with tf.io.gfile.GFile(path, 'wb') as f:
    f.write(serialize_counts(table))


def read_counts(path: str):
  with tf.io.gfile.GFile(path, 'rb') as f:
    return deserialize_counts(f.read())


def serialize_counts(table) -> bytes:
  import pyarrow as pa
  sink = pa.BufferOutputStream()
  with pa.ipc.new_stream(sink, table.schema) as writer:
    writer.write_table(table)
  return sink.getvalue().to_pybytes()


def deserialize_counts(data: bytes):
  import pyarrow as pa
  return pa.ipc.open_stream(data).read_all()


def token_dataset(examples_uri: str, split: str) -> tf.data.Dataset:
  """Dataset of 1-D string tensors, one per sequence."""
  files = split_files(examples_uri, split)
  spec = {TOKENS_FEATURE: tf.io.VarLenFeature(tf.string)}
  return tf.data.TFRecordDataset(files, compression_type='GZIP').map(
      lambda r: tf.sparse.to_dense(
          tf.io.parse_single_example(r, spec)[TOKENS_FEATURE]))


def token_blocks(examples_uri: str, split: str,
                 records: int = 256) -> Iterator[tf.RaggedTensor]:
  """The split's sequences, `records` at a time, as ragged [R, None] string
  tensors parsed eagerly (nothing traced: for a read of the first blocks)."""
  spec = {TOKENS_FEATURE: tf.io.RaggedFeature(tf.string)}
  files = split_files(examples_uri, split)
  for block in tf.data.TFRecordDataset(files,
                                       compression_type='GZIP').batch(records):
    yield tf.io.parse_example(block, spec)[TOKENS_FEATURE]


def read_sequences(examples_uri: str, split: str) -> Iterator[List[str]]:
  """Python iterator over token lists (for validation and tests)."""
  for tokens in token_dataset(examples_uri, split).as_numpy_iterator():
    yield [t.decode('utf-8') for t in tokens]


def make_example(tokens: List[str]) -> tf.train.Example:
  return tf.train.Example(features=tf.train.Features(feature={
      TOKENS_FEATURE: tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[t.encode('utf-8') for t in tokens]))
  }))
