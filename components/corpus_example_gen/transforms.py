"""Beam steps of the corpus ExampleGen: one element per byte range of a file.

`RangeToRecords` yields the range's serialized Examples (TFX's element-wise
contract of `GetInputSourceToExamplePTransform`); `WriteRangeSplits` also
assigns each record to its split, with TFX's hash (`_PartitionFn`: SHA-256
of the record), and writes one gzipped TFRecord file per split and range,
with the token counts of each.
"""

import collections
import dataclasses
import hashlib
import itertools
import json
import os
import uuid
from typing import Dict, List, Optional, Sequence, Union

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import tensorflow as tf
from absl import logging

from components.corpus_example_gen import encode
from components.corpus_example_gen import ranges as ranges_lib
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.core import text

METRICS_NAMESPACE = 'corpus_example_gen'
FILE_PREFIX = 'data_tfrecord'  # TFX's name (write_split.DEFAULT_FILE_NAME)
# zlib's fastest level: writing speed over file size (benchmarks/
# data_steps.py); still plain gzip.
GZIP_LEVEL = 1
_DIGEST = type(hashlib.sha256()).digest
# What a range skipped, in the temporary folder: `skipped_totals` sums them.
SKIPPED_PREFIX = 'skipped-'


def split_of(records: Sequence[bytes], buckets: Sequence[int]) -> np.ndarray:
  """The split index of every record; `buckets` are cumulative bucket
  counts, as in TFX's `_PartitionFn`."""
  total = buckets[-1]
  if total >= 1 << 31:  # the products below would overflow
    hashed = np.array([int.from_bytes(hashlib.sha256(r).digest(), 'big') %
                       total for r in records], np.int64)
    return np.searchsorted(np.asarray(buckets), hashed, side='right')
  # The digests as 4 big-endian 64-bit words; their number mod `total` is
  # summed from each word mod `total` (no Python loop per record).
  words = np.frombuffer(b''.join(map(_DIGEST, map(hashlib.sha256, records))),
                        '>u8').reshape(-1, 4) % np.uint64(total)
  hashed = np.zeros(len(records), np.int64)
  for i, weight in enumerate(pow(2, 64 * (3 - i), total) for i in range(4)):
    hashed = (hashed + words[:, i].astype(np.int64) * weight) % total
  return np.searchsorted(np.asarray(buckets), hashed, side='right')


class _RangeDoFn(beam.DoFn):
  """Reads and encodes a range; counts and logs what it skips."""

  def __init__(self):
    self._counters = {
        name: beam.metrics.Metrics.counter(METRICS_NAMESPACE, name)
        for name in ('capped_lines', 'dropped_long_tokens', 'blank_lines')}

  def _records(self, path: str, start: int, end: int,
               total: Optional[encode.Counts] = None):
    """Yields (records, their tokens) per block; adds what it skips to
    `total`."""
    total = encode.Counts() if total is None else total
    for block in ranges_lib.blocks(path, start, end):
      records, counts, tokens = encode.encode_block_with_tokens(block, path)
      total.add(counts)
      yield records, tokens
    for name, counter in self._counters.items():
      if getattr(total, name):
        counter.inc(getattr(total, name))
    if total.capped_lines or total.dropped_long_tokens:
      logging.warning(
          'corpus ExampleGen: %s: capped %d line(s) at %d tokens, dropped %d '
          'token(s) over %d bytes', path, total.capped_lines,
          text.MAX_TOKENS_PER_LINE, total.dropped_long_tokens,
          text.MAX_TOKEN_BYTES)


class RangeToRecords(_RangeDoFn):
  """(path, start, end) -> the serialized Examples of its lines."""

  def process(self, element: ranges_lib.Range):
    for records, _ in self._records(*element):
      yield from records


def _token_counts(tokens: pa.ListArray) -> pa.Table:
  counts = pc.value_counts(pc.list_flatten(tokens)).flatten()
  return pa.table({'values': counts[0].cast(pa.binary()),
                   'counts': counts[1]})


class WriteRangeSplits(_RangeDoFn):
  """(index, (path, start, end)) -> one file per split, written whole, and
  the split's token counts in `count_dirs` (see examples_io).

  A file is written in `temp_dir` (outside the split folders, which readers
  glob) and appears under its final name only once complete; a retried range
  rewrites the same names: reruns never leave partial or duplicate records.
  """

  def __init__(self, split_dirs: List[str], count_dirs: List[str],
               buckets: List[int], num_ranges: int, temp_dir: str):
    super().__init__()
    self._split_dirs = split_dirs
    self._count_dirs = count_dirs
    self._temp_dir = temp_dir
    self._buckets = buckets
    self._num_ranges = num_ranges
    self._instances = beam.metrics.Metrics.counter(METRICS_NAMESPACE,
                                                   'num_instances')

  def _records_files(self, index: int) -> List[str]:
    name = f'{FILE_PREFIX}-{index:05d}-of-{self._num_ranges:05d}.gz'
    return [os.path.join(d, name) for d in self._split_dirs]

  def _counts_files(self, index: int) -> List[str]:
    name = f'{index:05d}-of-{self._num_ranges:05d}.arrow'
    return [os.path.join(d, name) for d in self._count_dirs]

  def remove_outputs(self):
    """Removes the files of every range written so far (a failed run's)."""
    for index in range(self._num_ranges):
      for path in self._counts_files(index) + self._records_files(index):
        if tf.io.gfile.exists(path):
          tf.io.gfile.remove(path)

  def process(self, element):
    index, range_ = element
    finals = self._records_files(index)
    temps = [os.path.join(self._temp_dir, f'{uuid.uuid4().hex}.tmp')
             for _ in self._split_dirs]
    options = tf.io.TFRecordOptions(compression_type='GZIP',
                                     compression_level=GZIP_LEVEL)
    writers = [tf.io.TFRecordWriter(t, options) for t in temps]
    counts = [[] for _ in self._split_dirs]
    skipped = encode.Counts()
    try:
      for records, tokens in self._records(*range_, total=skipped):
        self._instances.inc(len(records))
        splits = split_of(records, self._buckets)
        for split, (writer, partials) in enumerate(zip(writers, counts)):
          mine = splits == split
          # No Python loop body per record: map and compress run in C.
          collections.deque(map(writer.write, itertools.compress(
              records, mine.tolist())), maxlen=0)
          partials.append(_token_counts(tokens.filter(pa.array(mine))))
          if len(partials) > 8:
            partials[:] = [examples_io.fold_counts(partials)]
    except BaseException:
      for writer, temp in zip(writers, temps):
        writer.close()
        tf.io.gfile.remove(temp)
      raise
    for writer, temp, final in zip(writers, temps, finals):
      writer.close()
      tf.io.gfile.rename(temp, final, overwrite=True)
    # Counts last: a range's counts exist only beside its complete records.
    for partials, final in zip(counts, self._counts_files(index)):
      temp = os.path.join(self._temp_dir, f'{uuid.uuid4().hex}.tmp')
      examples_io.write_counts(temp, examples_io.fold_counts(
          partials or [_token_counts(encode.NO_TOKENS)]))
      tf.io.gfile.rename(temp, final, overwrite=True)
    if skipped.capped_lines or skipped.dropped_long_tokens:
      with tf.io.gfile.GFile(os.path.join(
          self._temp_dir, f'{SKIPPED_PREFIX}{index:05d}.json'), 'w') as f:
        f.write(json.dumps({'file': range_[0]} | dataclasses.asdict(skipped)))
    yield finals


def skipped_totals(temp_dir: str) -> Dict[str, Union[int, str]]:
  """Capped lines and dropped tokens of the ranges written, and the first
  file that had some ({} when none had)."""
  totals: Dict[str, Union[int, str]] = {}
  for path in sorted(tf.io.gfile.glob(
      os.path.join(temp_dir, f'{SKIPPED_PREFIX}*.json'))):
    with tf.io.gfile.GFile(path) as f:
      found = json.load(f)
    totals.setdefault('file', found['file'])
    for name in ('capped_lines', 'dropped_long_tokens'):
      totals[name] = int(totals.get(name, 0)) + int(found.get(name, 0))
  return totals


def make_dirs(dirs: List[str]) -> List[str]:
  for d in dirs:
    tf.io.gfile.makedirs(d)
  return dirs
