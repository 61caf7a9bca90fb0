"""gensim's side of `real_corpora`: its runs and the figures both sides get.

gensim's worker threads race, so one run's figures move between runs (on
head500, analogy accuracy 0.019-0.026 across runs of one day). `run` trains
`RUNS` models with seeds 0, 1, 2...; the figures gensim is compared on are
the medians over them, and its training time the median of theirs. The
held-out loss (the gate's test) is the first model's.
"""

import os
import statistics
import time
from typing import Iterable, Optional

from benchmarks import text_corpora
from benchmarks import time_to_quality

RUNS = 3
EPOCHS = 5  # gensim's default


def median(values: Iterable[Optional[float]]) -> Optional[float]:
  """The median of the figures there are (None: too few items judged), or
  None when there is none."""
  known = [v for v in values if v is not None]
  return statistics.median(known) if known else None


def run(train_file, runs: int = RUNS, epochs: int = EPOCHS):
  """gensim Word2Vec(sg=1), its own defaults but `epochs`, `runs` times;
  (read s, median train s, models)."""
  from gensim.models import Word2Vec
  start = time.perf_counter()
  with open(train_file, encoding='utf-8') as f:
    sentences = [line.split() for line in f]
  read = time.perf_counter() - start
  models, seconds = [], []
  for seed in range(runs):
    start = time.perf_counter()
    models.append(Word2Vec(sentences, sg=1, seed=seed, epochs=epochs))
    seconds.append(time.perf_counter() - start)
  return read, median(seconds), models


def heldout_loss(home, model):
  """gensim's held-out skip-gram loss (vectors + syn1neg) on the validator's
  pairs, and the frequency-only model's; what the default gate compares."""
  from tpu_embeddings.artifacts import compact_vocabulary
  from tpu_embeddings.models import heldout
  from tpu_embeddings.models import skipgram_eval_data as eval_data
  from tpu_embeddings.quality import metrics
  from tpu_embeddings.validation.config import ValidatorConfig
  newest = time_to_quality.newest
  skipgram = eval_data.trained_skipgram(
      newest(home, 'EmbeddingTrainer', 'model'))
  data = eval_data.load(
      [newest(home)], compact_vocabulary.CompactVocabulary.read(
          newest(home, 'Vocabulary', 'vocabulary')), ValidatorConfig(),
      skipgram)
  words = model.wv.index_to_key
  table = metrics.align_table(words, model.wv.vectors, data.tokens)
  contexts = metrics.align_table(words, model.syn1neg, data.tokens)
  p = data.pairs
  return (heldout.skipgram_loss(table, p.targets, p.contexts, p.negatives,
                                contexts),
          eval_data.frequency(data, skipgram)['eval_loss'])


def _figures(table, common, ids, similarity, questions):
  """Each similarity set's Spearman and the analogy accuracy of `table` on
  the words of `common`: {name: (figure, pairs or questions judged)}."""
  from tpu_embeddings.quality import metrics
  aligned = metrics.align_table(table.tokens, table.unit, common)
  figures = {}
  for name, triples in similarity.items():
    sim = metrics.similarity_spearman(aligned, ids, triples)
    figures[name] = (sim['spearman'], sim['covered_pairs'])
  ana = metrics.analogy_accuracy(aligned, ids, questions)
  figures['analogy'] = (ana['analogy_accuracy'], ana['covered_questions'])
  return figures


def similarity_files(folder):
  """{name: path} of the NAME.tsv and NAME.txt files in `folder` ('' for
  none), e.g. eval-word-vectors' data/word-sim."""
  if not folder:
    return {}
  if not os.path.isdir(folder):
    raise ValueError(f'--similarity {folder}: not a directory')
  files = {}
  for f in sorted(os.listdir(folder)):
    name, ext = os.path.splitext(f)
    if ext not in ('.tsv', '.txt'):
      continue
    if name in files:
      raise ValueError(f'--similarity {folder}: both {name}.tsv and '
                       f'{name}.txt; keep one')
    files[name] = os.path.join(folder, f)
  if not files:
    raise ValueError(f'--similarity {folder}: no NAME.tsv or NAME.txt files '
                     'in it')
  return files


def similarity_sets(paths=None):
  """{name: scored pairs}: WordSim-353 (gensim's copy), then each of
  `paths` ({name: "word1<TAB>word2<TAB>score" file})."""
  from tpu_embeddings.quality import eval_files
  files = {'wordsim': text_corpora.datapath(text_corpora.WORDSIM),
           **(paths or {})}
  return {name: eval_files.read_similarity_file(path)
          for name, path in files.items()}


def judged(ours, gensims, also=(), similarity=None):
  """{name: (ours, gensim's median, items judged)} on the words our table,
  every gensim table and every table of `also` know; `similarity` as
  `similarity_sets` returns (WordSim-353 alone by default)."""
  from tpu_embeddings.quality import eval_files
  known = set(ours.tokens)
  for table in list(gensims) + list(also):
    known &= set(table.tokens)
  common = sorted(known)
  ids = {t: i for i, t in enumerate(common)}
  files = (similarity or similarity_sets(),
           eval_files.read_analogy_file(
               text_corpora.datapath(text_corpora.ANALOGIES)))
  mine = _figures(ours, common, ids, *files)
  theirs = [_figures(t, common, ids, *files) for t in gensims]
  return {name: (value, median(t[name][0] for t in theirs), n)
          for name, (value, n) in mine.items()}
