"""The next items both sides are judged on: none either side learned from."""

import os
import types

from benchmarks import skipgram_corpus
from benchmarks import time_to_quality


def test_next_items_are_the_held_out_last_items_and_the_eval_split(tmp_path):
  train = [['t1', 't2', 't3'], ['t4', 't5']]
  held = [f'e{i}' for i in range(1, 8)]
  # eval_every=2 puts every second line in the eval split.
  written = skipgram_corpus.write(str(tmp_path / 'written'),
                                  [train[0], held, train[1], ['x', 'y']],
                                  eval_every=2)
  runs = tmp_path / 'home' / 'pipeline' / 'FileBasedExampleGen' / 'examples'
  os.makedirs(runs / '2')  # an older, empty run: the newest one is read
  os.rename(written.examples_uri, runs / '10')
  corpus = types.SimpleNamespace(heldout=[(['t1', 't2', 't3'], 'last')])

  found = time_to_quality.next_items(str(tmp_path / 'home'), corpus)

  assert found[0] == (['t1', 't2', 't3'], 'last')
  assert found[1:7] == [(held[max(0, i - 5):i], held[i]) for i in range(1, 7)]
  assert found[6] == (['e2', 'e3', 'e4', 'e5', 'e6'], 'e7')  # last 5 only
  assert found[7:] == [(['x'], 'y')]
  assert not any(item.startswith('t') for _, item in found[1:])
