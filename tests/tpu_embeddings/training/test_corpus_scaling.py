"""The corpus-size rule on skip-gram's learning rate and subsample."""

import math

import pytest

from tpu_embeddings.artifacts.vocabularies import Vocabularies
from tpu_embeddings.artifacts.vocabulary_file import TokenCounts
from tpu_embeddings.models import module_files
from tpu_embeddings.training import corpus_scaling
from tpu_embeddings.training.config import TrainerConfig


def _vocabularies(total: int, named: str = '') -> Vocabularies:
  counts = (total // 2, total - total // 2)
  return Vocabularies(by_name={named: TokenCounts(('a', 'b'), counts)},
                      features={})


class _Module:
  """A module's declarations, as ModelModule.declared reads them."""

  def __init__(self, **declared):
    self._declared = declared

  def declared(self, name, default=None):
    return self._declared.get(name, default)


@pytest.mark.parametrize('tokens, rate, subsample', [
    (58_000, 1.0, 1.0),
    (1_000_000, 1.0, 1.0),
    # Halfway in log tokens: the square roots of the end factors.
    (int(math.sqrt(1e6 * 1e7)), 0.5, 10**-0.5),
    (10_000_000, 0.25, 0.1),
    (25_000_000, 0.25, 0.1),
])
def test_factors_fall_from_1_to_the_large_corpus_ones(tokens, rate,
                                                      subsample):
  got = corpus_scaling.factors(tokens)
  assert got == pytest.approx((rate, subsample), rel=1e-4)


def test_skipgram_on_12m_tokens_trains_at_a_quarter_rate_and_tenth_threshold():
  config, scaling = corpus_scaling.apply(
      TrainerConfig(), module_files.builtin(), _vocabularies(12_000_000))
  assert config.subsample == pytest.approx(1e-4)
  assert config.spec().optimizer.learning_rate == pytest.approx(2.0)
  assert scaling.to_dict() == {'tokens': 12_000_000,
                               'subsample': [1e-3, pytest.approx(1e-4)],
                               'learning_rate': [8.0, 2.0]}
  line = corpus_scaling.summary_line(scaling.to_dict())
  assert line == ('corpus scaling: 12,000,000 training tokens: learning rate '
                  '8 -> 2, subsample 0.001 -> 0.0001 '
                  '(trainer.corpus_scaling=false keeps them as set)')


def test_given_settings_are_the_small_corpus_end_of_the_rule():
  given = TrainerConfig(subsample=1e-2).replace(
      embedding_spec=TrainerConfig().spec().to_json().replace(
          '"learning_rate": 8.0', '"learning_rate": 4.0'))
  config, _ = corpus_scaling.apply(given, module_files.builtin(),
                                   _vocabularies(20_000_000))
  assert config.subsample == pytest.approx(1e-3)
  assert config.spec().optimizer.learning_rate == pytest.approx(1.0)


def test_small_corpora_keep_the_settings_and_say_so():
  config, scaling = corpus_scaling.apply(
      TrainerConfig(), module_files.builtin(), _vocabularies(58_000))
  assert config == TrainerConfig()
  assert corpus_scaling.summary_line(scaling.to_dict()) == (
      'corpus scaling: 58,000 training tokens, up to 1,000,000: learning '
      'rate and subsample as set')


def test_switched_off_the_settings_stay_as_set():
  given = TrainerConfig(corpus_scaling=False)
  assert corpus_scaling.apply(given, module_files.builtin(),
                              _vocabularies(12_000_000)) == (given, None)
  assert corpus_scaling.summary_line(None) == ''


def test_a_module_that_does_not_read_the_setting_is_not_scaled():
  given = TrainerConfig()
  module = _Module(SETTINGS_READ=('trainer.subsample',))
  assert corpus_scaling.apply(given, module,
                              _vocabularies(12_000_000)) == (given, None)


def test_a_module_with_its_own_spec_gets_only_the_subsample_scaled():
  module = _Module(SETTINGS_READ=('trainer.subsample',
                                  'trainer.corpus_scaling'))
  config, scaling = corpus_scaling.apply(TrainerConfig(), module,
                                         _vocabularies(12_000_000, 'items'))
  assert config.subsample == pytest.approx(1e-4)
  assert config.embedding_spec == ''
  assert scaling.learning_rate is None
  assert 'learning rate' not in corpus_scaling.summary_line(
      scaling.to_dict())
