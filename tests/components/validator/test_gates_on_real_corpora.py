"""The default gates on real corpora: gensim's vectors are blessed; an
untrained table, a collapsed table and a diverged run are refused.

Corpora: gensim's Lee news stories, head500 and English Wikipedia texts and
the generated interaction corpus (tests/support/real_corpora.py), each cut
to 60k tokens. The good model is gensim Word2Vec(sg=1) on the train split,
its vectors and its contexts table (syn1neg) written as the trainer's two
tables; with gensim's 5 passes, 60k tokens of Wikipedia leave its rows near
their start (mean pairwise cosine 0.99, held-out loss above the
frequency-only model's), so it makes `GOOD_EPOCHS`. The diverged run is the
real trainer at a learning rate far too high.
Every verdict is the CheckpointValidator executor's, with default settings.
"""

import os

import numpy as np
import pytest

from components.trainer import executor
from tests.support import artifact_fixtures as fx
from tests.support import real_corpora
from tests.support.validator_runs import failed_gates
from tests.support.validator_runs import run
from tpu_embeddings.quality import metrics
from tpu_embeddings.training.config import TableConfig

pytestmark = pytest.mark.slow
SPEC = TableConfig().embedding_spec()
GOOD_EPOCHS = 15


@pytest.fixture(scope='module', params=real_corpora.NAMES)
def corpus(request, tmp_path_factory):
  """Examples, vocabulary and gensim's two tables of one real corpus."""
  from gensim.models import Word2Vec
  base = str(tmp_path_factory.mktemp(request.param))
  splits, counts = real_corpora.splits(request.param, base)
  examples = fx.write_examples(os.path.join(base, 'examples'), splits)
  vocab_uri = os.path.join(base, 'vocabulary')
  vocab = fx.write_vocabulary(vocab_uri, counts)
  model = Word2Vec(splits['train'], sg=1, vector_size=SPEC.tables[0].dim,
                   epochs=GOOD_EPOCHS, workers=1, seed=1)
  tokens = list(vocab.tokens)
  return {
      'name': request.param, 'base': base, 'examples': examples,
      'vocabulary': vocab_uri, 'vocab': vocab, 'related': '',
      'tokens': metrics.align_table(model.wv.index_to_key, model.wv.vectors,
                                    tokens),
      'contexts': metrics.align_table(model.wv.index_to_key, model.syn1neg,
                                      tokens),
  }


def _validate(corpus, name, tables=None):
  model = os.path.join(corpus['base'], name)
  fx.write_tpu_format_model(model, corpus['vocab'].tokens, spec=SPEC,
                            tables=tables, counts=corpus['vocab'].counts)
  return _verdict(corpus, model, name)


def _verdict(corpus, model, name):
  _, report = run(corpus, model, os.path.join(corpus['base'], f'b-{name}'),
                  related_pairs_file='', beat_frequency_model=True)
  return report


def test_gensim_vectors_are_blessed(corpus):
  report = _validate(corpus, 'gensim', {'tokens': corpus['tokens'],
                                        'contexts': corpus['contexts']})
  assert report['blessed'], (corpus['name'], report['summary'])
  found = report['metrics']
  assert found['candidate']['eval_loss'] < found['frequency']['eval_loss']


def test_an_untrained_table_is_refused_as_having_learned_nothing(corpus):
  report = _validate(corpus, 'untrained')  # the spec's initial values
  assert not report['blessed']
  assert 'learned nothing' in failed_gates(report)['frequency/eval_loss']


def test_a_collapsed_table_is_refused(corpus):
  rng = np.random.default_rng(0)
  rows = corpus['tokens']
  collapsed = (rows.mean(axis=0) + 1e-3 * rng.normal(size=rows.shape)
               ).astype(np.float32)
  report = _validate(corpus, 'collapsed', {'tokens': collapsed,
                                           'contexts': corpus['contexts']})
  # Its contexts table still scores each context token as the counts do,
  # sometimes a little better than the frequency-only model on held-out
  # pairs: the collapse gate is the one that refuses it.
  assert not report['blessed']
  assert 'collapsed' in failed_gates(report)['health/tokens/not_collapsed']


def test_a_diverged_run_is_refused(corpus):
  model = os.path.join(corpus['base'], 'diverged')
  # The highest rate the bounds allow: SGD there diverges within 30 steps.
  spec = TableConfig(optimizer='sgd', learning_rate=1e4).embedding_spec()
  executor.train(
      executor.TrainerArgs([fx.SpanlessExamples(corpus['examples'])],
                           corpus['vocabulary'], model,
                           os.path.join(corpus['base'], 'run')),
      executor.TrainerConfig(embedding_spec=spec.to_json(), train_steps=30,
                             projector_tokens=0))
  report = _verdict(corpus, model, 'diverged')
  assert not report['blessed']
  failed = failed_gates(report)
  assert any(name.startswith('health/tokens/') for name in failed), failed
