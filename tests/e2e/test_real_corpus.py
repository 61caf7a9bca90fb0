"""The default pipeline on a real text nobody here wrote: gensim's Lee news
stories (lee_background.cor, 58k tokens), with no settings at all.

It must be blessed by the default gates, show its training progress, and
its nearest neighbours of common words must agree with gensim's skip-gram
(its own defaults, the same train split) far above chance.
"""

import contextlib
import glob
import io
import logging
import os

import numpy as np
import pytest

from benchmarks import text_corpora
from pipelines.cli.main import main
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.push_root import consumer

WORDS = ('government', 'police', 'minister', 'united', 'israeli',
         'palestinian', 'afghanistan', 'president', 'company', 'people')


@pytest.fixture(scope='module')
def lee(tmp_path_factory):
  root = tmp_path_factory.mktemp('lee')
  text_corpora.write('lee', str(root / 'data'))
  return root


@pytest.fixture(scope='module')
def run_output(lee):
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    rc = main(['run', '--data', str(lee / 'data'), '--home',
               str(lee / 'home')])
  return rc, out.getvalue()


def test_the_default_pipeline_blesses_and_pushes_a_real_text(run_output):
  rc, out = run_output
  assert rc == 0, out
  assert 'validation: BLESSED' in out, out
  assert 'pushed: version 1' in out
  # The trainer's progress, without --verbose.
  assert 'epoch 5/5' in out and 'examples/s' in out, out


def _train_split(home):
  [examples] = glob.glob(os.path.join(home, 'pipeline', 'FileBasedExampleGen',
                                      'examples', '*'))
  return [list(s) for s in examples_io.read_sequences(examples, 'train')]


def test_neighbours_of_common_words_agree_with_gensim(lee, run_output):
  from gensim.models import Word2Vec
  logging.getLogger('gensim').setLevel(logging.WARNING)
  gensim = Word2Vec(_train_split(str(lee / 'home')), sg=1, workers=1,
                    seed=1).wv
  push_root = str(lee / 'home' / 'pushed')
  overlaps = []
  for word in WORDS:
    theirs = {t for t, _ in gensim.most_similar(word, topn=10)}
    _, ours = consumer.neighbors(push_root, word, k=10)
    overlaps.append(len(theirs & {t for t, _ in ours}))
  # Two random top-10 lists over V words share 100 / V words on average.
  chance = 100 / len(gensim.index_to_key)
  assert np.mean(overlaps) > 5 * chance, (overlaps, chance)
  assert sum(1 for n in overlaps if n) >= len(WORDS) // 2, overlaps
