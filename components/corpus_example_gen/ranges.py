"""Byte ranges of corpus files, read back as blocks of whole lines.

A line belongs to the range holding its first byte, so the ranges of a file
read every line exactly once, whatever the boundaries.
"""

import concurrent.futures
from typing import Iterator, List, Tuple

import tensorflow as tf

MIN_RANGE_BYTES = 4 << 20
MAX_RANGE_BYTES = 64 << 20
BLOCK_BYTES = 8 << 20
# Ranges per corpus aimed at, so that Beam workers have work to share.
TARGET_RANGES = 8

Range = Tuple[str, int, int]  # path, start, end


def plan(files: List[str]) -> List[Range]:
  """The ranges of `files`, each about the same size, in file order."""
  with concurrent.futures.ThreadPoolExecutor(8) as pool:  # remote files
    sizes = [s.length for s in pool.map(tf.io.gfile.stat, files)]
  size = min(MAX_RANGE_BYTES,
             max(MIN_RANGE_BYTES, -(-sum(sizes) // TARGET_RANGES)))
  ranges = []
  for path, length in zip(files, sizes):
    ranges += [(path, start, min(start + size, length))
               for start in range(0, max(length, 1), size)]
  return ranges


def blocks(path: str, start: int, end: int,
           block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
  """The lines starting in [start, end), in blocks of about `block_bytes`."""
  with tf.io.gfile.GFile(path, 'rb') as f:
    pos = start
    if start > 0:
      f.seek(start - 1)
      pos = start - 1 + len(f.readline())  # the line begun before `start`
    while pos < end:
      block = f.read(min(block_bytes, end - pos))
      if not block:
        return
      pos += len(block)
      if not block.endswith(b'\n'):
        rest = f.readline()
        pos += len(rest)
        block += rest
      yield block
