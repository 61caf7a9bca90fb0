"""Tiny inputs the corpus benchmarks' smoke tests run on: far too small
for their figures to mean anything, big enough for every step to run."""

from benchmarks import text_corpora

EVENTS_HEADER = 'user_or_session,item,timestamp\n'


def walk_events(path) -> str:
  """Writes 240 sessions walking through 60 items in 6 groups of 10 (8
  events each) as an events CSV at `path`; returns its path."""
  rows = [EVENTS_HEADER]
  for session in range(240):
    group = session % 6
    rows.extend(f's{session},g{group}-{(session + step) % 10},{step}\n'
                for step in range(8))
  with open(path, 'w', encoding='utf-8') as f:
    f.write(''.join(rows))
  return str(path)


def lee_stories(path, lines: int = 80):
  """Writes the first `lines` stories of gensim's Lee corpus, lower-cased,
  one per line, at `path`; returns them as token lists."""
  with open(text_corpora.datapath('lee_background.cor'),
            encoding='utf-8') as f:
    stories = [line.lower().split() for line, _ in zip(f, range(lines))]
  with open(path, 'w', encoding='utf-8') as f:
    f.write(''.join(' '.join(s) + '\n' for s in stories))
  return stories
