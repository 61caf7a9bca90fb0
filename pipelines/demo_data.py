"""A deterministic synthetic corpus with planted structure, for demos and tests.

Tokens belong to topics; every line is drawn mostly from one topic (Zipf-like
within it) plus a few topic-free filler tokens. Tokens are named
`<topic>-<syllables>` so a nearest-neighbour listing shows at a glance whether
the structure was learned. `related_pairs.tsv` lists same-topic pairs among
each topic's most frequent tokens: the ground truth the trainer and validator
score against.

    <out>/span-1/corpus-00000.txt ... <out>/span-N/corpus-00000.txt
    <out>/related_pairs.tsv
"""

import dataclasses
import os
import random
import shutil
from typing import List, Tuple

TOPICS = ('music', 'food', 'sport', 'space', 'ocean', 'forest', 'city',
          'code', 'film', 'garden', 'travel', 'weather', 'art', 'math',
          'health', 'money')
SYLLABLES = ('ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'te', 'vo', 'zi', 'pa',
             'do', 're', 'fu', 'gi', 'ho', 'ju')
RELATED_PAIRS_FILENAME = 'related_pairs.tsv'
CORPUS_FILENAME = 'corpus-00000.txt'


@dataclasses.dataclass(frozen=True)
class CorpusShape:
  topics: int = 8
  tokens_per_topic: int = 40
  filler_tokens: int = 20
  lines_per_span: int = 1500
  min_length: int = 6
  max_length: int = 16
  filler_rate: float = 0.15
  related_per_topic: int = 8

  def validate(self):
    if not 1 <= self.topics <= len(TOPICS):
      raise ValueError(f'demo-data: topics must be 1..{len(TOPICS)}, '
                       f'got {self.topics}')
    for name in ('tokens_per_topic', 'lines_per_span', 'min_length'):
      if getattr(self, name) < 2:
        raise ValueError(f'demo-data: {name} must be >= 2')
    if self.max_length < self.min_length:
      raise ValueError('demo-data: max_length must be >= min_length')
    if not 2 <= self.related_per_topic <= self.tokens_per_topic:
      raise ValueError('demo-data: related_per_topic must be in '
                       '2..tokens_per_topic')


def _words(rng: random.Random, n: int, taken: set) -> List[str]:
  words = []
  while len(words) < n:
    w = ''.join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
    if w not in taken:
      taken.add(w)
      words.append(w)
  return words


def _vocabulary(shape: CorpusShape, seed: int):
  rng = random.Random(f'vocab-{seed}')
  taken = set()
  topics = [[f'{TOPICS[t]}-{w}' for w in _words(rng, shape.tokens_per_topic,
                                                 taken)]
            for t in range(shape.topics)]
  filler = [f'x-{w}' for w in _words(rng, shape.filler_tokens, taken)]
  return topics, filler


def _zipf_weights(n: int) -> List[float]:
  return [1.0 / (i + 1) ** 0.8 for i in range(n)]


def related_pairs(shape: CorpusShape = CorpusShape(),
                  seed: int = 0) -> List[Tuple[str, str]]:
  topics, _ = _vocabulary(shape, seed)
  pairs = []
  for tokens in topics:
    top = tokens[:shape.related_per_topic]
    pairs += [(a, b) for i, a in enumerate(top) for b in top[i + 1:]]
  return pairs


def span_lines(span: int, shape: CorpusShape = CorpusShape(),
               seed: int = 0) -> List[str]:
  """The lines of one span (spans differ, vocabulary and topics do not)."""
  topics, filler = _vocabulary(shape, seed)
  weights = _zipf_weights(shape.tokens_per_topic)
  rng = random.Random(f'span-{seed}-{span}')
  lines = []
  for _ in range(shape.lines_per_span):
    topic = topics[rng.randrange(len(topics))]
    n = rng.randint(shape.min_length, shape.max_length)
    line = [rng.choice(filler) if filler and rng.random() < shape.filler_rate
            else rng.choices(topic, weights)[0] for _ in range(n)]
    lines.append(' '.join(line))
  return lines


def generate(out_dir: str, spans: int = 2, seed: int = 0,
             first_span: int = 1, shape: CorpusShape = CorpusShape()) -> str:
  """Writes spans `first_span..first_span+spans-1` and the related pairs."""
  shape.validate()
  if spans < 1:
    raise ValueError(f'demo-data: --spans must be >= 1, got {spans}')
  os.makedirs(out_dir, exist_ok=True)
  for span in range(first_span, first_span + spans):
    if os.path.exists(os.path.join(out_dir, f'span-{span}')):
      raise FileExistsError(f'demo-data: {out_dir}/span-{span} already '
                            'exists; choose another --out or --first-span')
  for span in range(first_span, first_span + spans):
    write_span(out_dir, span, seed, shape)
  with open(os.path.join(out_dir, RELATED_PAIRS_FILENAME), 'w',
            encoding='utf-8') as f:
    f.writelines(f'{a}\t{b}\n' for a, b in related_pairs(shape, seed))
  return out_dir


def write_span(out_dir: str, span: int, seed: int = 0,
               shape: CorpusShape = CorpusShape()) -> str:
  """Writes one span folder atomically (a half-written span is never seen)."""
  final = os.path.join(out_dir, f'span-{span}')
  if os.path.exists(final):
    raise FileExistsError(f'demo-data: {final} already exists; choose another '
                          '--out or --first-span')
  tmp = os.path.join(out_dir, f'.span-{span}.tmp')
  shutil.rmtree(tmp, ignore_errors=True)
  os.makedirs(tmp)
  with open(os.path.join(tmp, CORPUS_FILENAME), 'w', encoding='utf-8') as f:
    f.writelines(l + '\n' for l in span_lines(span, shape, seed))
  os.rename(tmp, final)
  return final


def read_related_pairs(path: str) -> List[Tuple[str, str]]:
  """Reads "tokenA<TAB>tokenB" lines (extra columns ignored)."""
  pairs = []
  with open(path, encoding='utf-8') as f:
    for n, line in enumerate(f, start=1):
      parts = line.rstrip('\n').split('\t')
      if len(parts) < 2 or not parts[0] or not parts[1]:
        raise ValueError(f'{path} line {n}: expected "tokenA<TAB>tokenB"')
      pairs.append((parts[0], parts[1]))
  return pairs
