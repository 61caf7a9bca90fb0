"""Real interaction or session logs as item sequences, last items held out.

An events file is a CSV with the header `user_or_session,item,timestamp`
(one row per event; any row order). Each session's items in time order (ties
keep the file's order) make one sequence; its last item is held out (the
next-item target of `embedding_quality.hit_rate`, queried by the at most
`interaction_corpus.QUERY_ITEMS` items before it) and the rest is written as
a one-span data root the pipeline reads:

    <data_root>/span-1/corpus.txt   one sequence per line, items by spaces

A session of one event has nothing to learn from once its item is held
out: it is left out (and counted).
"""

import csv
import dataclasses
import os
from typing import Dict, List, Tuple

from benchmarks import interaction_corpus

HEADER = ('user_or_session', 'item', 'timestamp')


@dataclasses.dataclass(frozen=True)
class Sessions:
  """A written data root and what was held out of it (`heldout`, as
  `time_to_quality.next_items` takes a corpus)."""
  data_root: str
  corpus_file: str
  heldout: List[Tuple[List[str], str]]
  events: int  # written, the held-out items not counted
  items: int  # distinct items of the whole file
  skipped: int  # sessions of one event


def read(path: str) -> List[List[str]]:
  """Each session's items in time order, sessions in order of first event.
  """
  sessions: Dict[str, List[Tuple[float, int, str]]] = {}
  with open(path, encoding='utf-8', newline='') as f:
    rows = csv.reader(f)
    header = tuple(next(rows, ()))
    if header != HEADER:
      raise ValueError(f'{path}: the header must be {",".join(HEADER)}, '
                       f'got {",".join(header) or "nothing"}')
    for line, row in enumerate(rows, start=2):
      if len(row) != len(HEADER):
        raise ValueError(f'{path} line {line}: expected {len(HEADER)} '
                         f'fields ({",".join(HEADER)}), got {len(row)}')
      session, item, timestamp = row
      try:
        when = float(timestamp)
      except ValueError:
        raise ValueError(f'{path} line {line}: timestamp {timestamp!r} is '
                         'not a number') from None
      if not item or ' ' in item:
        raise ValueError(f'{path} line {line}: item {item!r} must be '
                         'non-empty and hold no space')
      sessions.setdefault(session, []).append((when, line, item))
  return [[item for _, _, item in sorted(events)]
          for events in sessions.values()]


def write(sequences: List[List[str]], data_root: str) -> Sessions:
  """Writes every sequence but its last item; holds those out."""
  span = os.path.join(data_root, 'span-1')
  os.makedirs(span, exist_ok=True)
  corpus_file = os.path.join(span, 'corpus.txt')
  heldout, events, skipped, items = [], 0, 0, set()
  with open(corpus_file, 'w', encoding='utf-8') as f:
    for sequence in sequences:
      items.update(sequence)
      if len(sequence) < 2:
        skipped += 1
        continue
      written = sequence[:-1]
      f.write(' '.join(written) + '\n')
      events += len(written)
      heldout.append((written[-interaction_corpus.QUERY_ITEMS:],
                      sequence[-1]))
  return Sessions(data_root, corpus_file, heldout, events, len(items),
                  skipped)
