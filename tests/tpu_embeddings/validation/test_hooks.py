"""Tests of tpu_embeddings/validation/hooks.py: a module's hooks, defaults."""

import types

import pytest

from tpu_embeddings.models import served
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.user_code import UserCodeError
from tpu_embeddings.validation import hooks


def _module(**names):
  defaults = dict(FEATURES={'item': 'item'}, embedding_spec=lambda ctx: None,
                  loss_fn=lambda *a: None, signatures=lambda *a: {},
                  METRICS={'recall': 'higher', 'loss': 'lower'},
                  eval_fn=lambda serve, ctx: {'recall': 0.5, 'loss': 1.0,
                                              'pairs': 7, 'note': 'x'})
  return ModelModule(types.SimpleNamespace(**dict(defaults, **names)),
                     path='my_model.py')


def test_without_hooks_every_metric_must_beat_the_untrained_model():
  module = _module()
  assert hooks.references(module, None) == {}
  assert hooks.floors(module, None) == {'recall': ['untrained'],
                                        'loss': ['untrained']}
  assert hooks.details(module, {}, None) == {}


def test_eval_keeps_the_metrics_and_the_other_numbers():
  found = hooks.evaluate(_module(), served.Served({}, served.CANDIDATE), None,
                         [])
  assert found == {'recall': 0.5, 'loss': 1.0, 'pairs': 7}


def test_a_baseline_eval_fn_cannot_score_is_a_warning_the_candidate_an_error():
  def fails(serve, ctx):
    raise KeyError('retrieve')
  module = _module(eval_fn=fails)
  warnings = []
  baseline = served.Served({}, served.BASELINE, label='baseline version 2')
  assert hooks.evaluate(module, baseline, None, warnings) is None
  assert warnings[0].startswith('baseline version 2: eval_fn cannot score it')
  with pytest.raises(UserCodeError, match='my_model.py'):
    hooks.evaluate(module, served.Served({}, served.CANDIDATE), None, [])


def test_hooks_returning_the_wrong_shape_are_one_line_errors():
  bad = _module(references_fn=lambda ctx: {'zero': 0.0},
                floors_fn=lambda ctx: {'accuracy': ['zero']},
                details_fn=lambda serves, ctx: {'plots': []})
  with pytest.raises(ValueError, match='my_model.py: references_fn must'):
    hooks.references(bad, None)
  with pytest.raises(ValueError, match='my_model.py: floors_fn must'):
    hooks.floors(bad, None)
  with pytest.raises(ValueError, match='my_model.py: details_fn must'):
    hooks.details(bad, {}, None)


def test_declared_floors_and_references_replace_the_defaults():
  module = _module(
      references_fn=lambda ctx: {'random': {'label': 'random ranking',
                                            'metrics': {'recall': 0.1}}},
      floors_fn=lambda ctx: {'recall': ['random']})
  assert hooks.references(module, None)['random']['label'] == 'random ranking'
  assert hooks.floors(module, None) == {'recall': ['random']}
