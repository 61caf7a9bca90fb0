"""Real text corpora that ship inside a package of the lock (gensim's tests).

Each becomes a data root the pipeline reads (`<root>/span-1/corpus.txt`, one
sequence per line, tokens separated by spaces), tokenized once here so the
pipeline and gensim learn from the same tokens:

* lee: `lee_background.cor`, 300 news stories, `simple_preprocess`ed
  (lower-cased words), one story per line, ~58k tokens;
* head500: `head500.noblanks.cor`, the first 500 articles of a Wikipedia dump,
  already lower-cased and stemmed, ~335k tokens;
* enwiki: the shortened `enwiki-latest-pages-articles1...bz2` dump through
  gensim's `WikiCorpus` (markup stripped, lower-cased), ~453k tokens.

Long documents are cut into lines of at most `MAX_LINE_TOKENS` tokens (the
pipeline keeps at most 10,000 tokens of a line, gensim at most 10,000 of a
sentence). The judgement files are gensim's `wordsim353.tsv` and
`questions-words.txt`.
"""

import os
from typing import Callable, Dict, Iterable, Iterator, List

MAX_LINE_TOKENS = 1000
WORDSIM = 'wordsim353.tsv'
ANALOGIES = 'questions-words.txt'
_ENWIKI = 'enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2'


def datapath(name: str) -> str:
  import gensim.test.utils
  return gensim.test.utils.datapath(name)


def _preprocessed_lines(name: str) -> Iterator[List[str]]:
  from gensim.utils import simple_preprocess
  with open(datapath(name), encoding='utf-8') as f:
    for line in f:
      yield simple_preprocess(line)


def _wiki_articles() -> Iterator[List[str]]:
  from gensim.corpora.wikicorpus import WikiCorpus
  wiki = WikiCorpus(datapath(_ENWIKI), dictionary={}, processes=1)
  yield from wiki.get_texts()


def split_lines(documents: Iterable[List[str]]) -> Iterator[List[str]]:
  """Documents as lines of at most MAX_LINE_TOKENS tokens."""
  for tokens in documents:
    for start in range(0, len(tokens), MAX_LINE_TOKENS):
      yield tokens[start:start + MAX_LINE_TOKENS]


CORPORA: Dict[str, Callable[[], Iterable[List[str]]]] = {
    'lee': lambda: _preprocessed_lines('lee_background.cor'),
    'head500': lambda: _preprocessed_lines('head500.noblanks.cor'),
    'enwiki': _wiki_articles,
}


def _file_lines(path: str) -> Iterator[List[str]]:
  with open(path, encoding='utf-8') as f:
    for line in f:
      yield line.split()


def write(name: str, data_root: str, path: str = '') -> int:
  """Writes corpus `name`, or the tokenized text at `path` (one sequence per
  line, tokens separated by spaces), as a one-span data root; returns its
  tokens."""
  span = os.path.join(data_root, 'span-1')
  os.makedirs(span, exist_ok=True)
  tokens = 0
  documents = _file_lines(path) if path else CORPORA[name]()
  with open(os.path.join(span, 'corpus.txt'), 'w', encoding='utf-8') as f:
    for line in split_lines(documents):
      if line:
        f.write(' '.join(line) + '\n')
        tokens += len(line)
  return tokens
