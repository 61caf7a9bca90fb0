"""Tests of tpu_embeddings/models/skipgram_eval.py: skip-gram's hooks."""

import types

import pytest

from tpu_embeddings.models import skipgram_module
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.validation.config import ValidatorConfig


@pytest.mark.parametrize('context_table, two_table_candidate, words', [
    (False, False, ''),
    (False, True, 'the candidate scores pairs with a contexts table'),
    (True, False, 'trained with a contexts table it does not hold'),
    (None, False, 'cannot be read'),
])
def test_held_out_losses_are_compared_only_between_tied_models(
    context_table, two_table_candidate, words):
  from tpu_embeddings.models import skipgram_eval
  source = (None if context_table is None else
            skipgram_spec(context_table=context_table))
  why = skipgram_eval.loss_not_comparable(two_table_candidate, source)
  assert (why == '') if not words else (words in why)


@pytest.mark.parametrize('context_table, settings, floors', [
    (True, {}, {'eval_loss': ['frequency']}),
    (False, {}, {'recall_at_k': ['popularity']}),
    (True, {'beat_popularity': True},
     {'eval_loss': ['frequency'], 'recall_at_k': ['popularity']}),
    (True, {'beat_frequency_model': False}, {}),
])
def test_floors_follow_the_tables_and_the_settings(tmp_path, context_table,
                                                   settings, floors):
  from tpu_embeddings.models import skipgram_eval
  skipgram_spec(context_table=context_table).save(str(tmp_path))
  ctx = types.SimpleNamespace(model_uri=str(tmp_path), cache={},
                              evaluation=ValidatorConfig(**settings))
  assert skipgram_eval.floors_fn(ctx) == floors


def test_the_built_in_module_declares_its_evaluation():
  module = ModelModule(skipgram_module)
  assert module.has_eval
  assert module.metrics['eval_loss'] == 'lower'
  assert module.metrics['recall_at_k'] == 'higher'
  for name in ('references_fn', 'floors_fn', 'details_fn'):
    assert callable(module.hook(name))


@pytest.mark.parametrize('hook', ['references_fn', 'floors_fn', 'details_fn'])
def test_a_hook_that_is_not_a_function_is_refused_when_loaded(hook):
  from tpu_embeddings.models.model_module import ModelModuleError
  module = types.SimpleNamespace(
      FEATURES={'item': 'item'}, embedding_spec=lambda ctx: None,
      loss_fn=lambda *a: None, signatures=lambda *a: {}, **{hook: 3})
  with pytest.raises(ModelModuleError, match=f'{hook}: must be a function'):
    ModelModule(module, path='my_model.py')
