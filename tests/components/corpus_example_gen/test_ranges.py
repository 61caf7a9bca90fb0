"""File ranges: every line read exactly once, whatever the boundaries."""

import random

import pytest

from components.corpus_example_gen import ranges


@pytest.mark.slow
@pytest.mark.parametrize('range_bytes', [1, 2, 7, 64, 1000, 10**6])
@pytest.mark.parametrize('block_bytes', [1, 5, 300])
@pytest.mark.parametrize('newline_at_end', [True, False])
def test_ranges_read_every_line_once(tmp_path, monkeypatch, range_bytes,
                                     block_bytes, newline_at_end):
  rng = random.Random(range_bytes * 31 + block_bytes)
  lines = [' '.join('w' * rng.randint(1, 9) for _ in range(rng.randint(0, 6)))
           for _ in range(200)]
  data = '\n'.join(lines).encode() + (b'\n' if newline_at_end else b'')
  path = tmp_path / 'a.txt'
  path.write_bytes(data)
  (tmp_path / 'empty.txt').write_bytes(b'')
  monkeypatch.setattr(ranges, 'MIN_RANGE_BYTES', range_bytes)
  monkeypatch.setattr(ranges, 'MAX_RANGE_BYTES', range_bytes)
  planned = ranges.plan([str(path), str(tmp_path / 'empty.txt')])
  assert len(planned) == -(-len(data) // range_bytes) + 1
  read = b''.join(block for r in planned
                  for block in ranges.blocks(*r, block_bytes=block_bytes))
  assert read == data
  for r in planned:
    for block in ranges.blocks(*r, block_bytes=block_bytes):
      assert block.endswith(b'\n') or block == data[-len(block):]


def test_ranges_share_the_corpus_evenly(tmp_path):
  paths = []
  for i, size in enumerate([30 << 20, 1 << 20, 0]):
    path = tmp_path / f'{i}.txt'
    with open(path, 'wb') as f:
      f.truncate(size)
    paths.append(str(path))
  planned = ranges.plan(paths)
  assert [(p, s, e) for p, s, e in planned if p == paths[1]] == [
      (paths[1], 0, 1 << 20)]
  assert [e - s for p, s, e in planned if p == paths[0]] == [4 << 20] * 7 + [
      2 << 20]
  assert (paths[2], 0, 0) in planned
