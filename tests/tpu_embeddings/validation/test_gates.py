"""Tests of tpu_embeddings/validation/gates.py."""

import pytest

from tpu_embeddings.validation import gates


def _health(**overrides):
  h = {'nonfinite_values': 0, 'nonfinite_rows': 0, 'mean_pairwise_cosine': 0.1,
       'max_norm': 3.0}
  h.update(overrides)
  return h


def test_thresholds_reject_bad_values_by_name():
  with pytest.raises(ValueError, match='max_row_norm must be a number >= '):
    gates.Thresholds(max_row_norm=0)
  with pytest.raises(ValueError, match='min_recall_at_k must be a finite'):
    gates.Thresholds(min_recall_at_k=float('nan'))
  with pytest.raises(ValueError, match='regression_margin must be a number '
                     '>= 0 and <= 1, got -0.1'):
    gates.Thresholds(regression_margin=-0.1)
  with pytest.raises(ValueError, match='max_mean_cosine must be a number '
                     '>= -1 and <= 1, got 2'):
    gates.Thresholds(max_mean_cosine=2.0)


def test_healthy_table_passes_every_health_gate():
  result = gates.health_gates('tokens', _health(), gates.Thresholds())
  assert [g.name for g in result] == ['health/tokens/finite',
                                      'health/tokens/not_collapsed',
                                      'health/tokens/norms']
  assert all(g.passed for g in result)


@pytest.mark.parametrize('overrides, failing, words', [
    ({'nonfinite_values': 3, 'nonfinite_rows': 1}, 'finite', '3 NaN/Inf'),
    ({'mean_pairwise_cosine': 0.995}, 'not_collapsed', 'collapsed'),
    ({'mean_pairwise_cosine': None}, 'not_collapsed', 'fewer than two'),
    ({'max_norm': 1e6}, 'norms', 'exploded'),
    ({'max_norm': None}, 'norms', 'exploded'),
])
def test_each_unhealthy_table_fails_its_gate_with_a_reason(overrides, failing,
                                                          words):
  result = gates.health_gates('tokens', _health(**overrides),
                              gates.Thresholds())
  failed = [g for g in result if not g.passed]
  assert [g.name for g in failed] == [f'health/tokens/{failing}']
  assert words in failed[0].reason and "'tokens'" in failed[0].reason
  assert not gates.blessed(result)


def test_a_table_of_nan_says_so_in_every_health_gate():
  """Not "max row norm none": collapse and norms are not measured."""
  result = gates.health_gates('tokens', _health(
      nonfinite_values=864, nonfinite_rows=54, mean_pairwise_cosine=None,
      max_norm=None), gates.Thresholds())
  assert not any(g.passed for g in result)
  assert [g.reason for g in result] == [
      "table 'tokens': 864 NaN/Inf values in 54 rows",
      "collapse not measured: table 'tokens' holds NaN/Inf",
      "row norms not measured: table 'tokens' holds NaN/Inf"]
  assert 'none' not in gates.summary(result).lower()


DIRECTIONS = {'eval_loss': 'lower', 'recall_at_k': 'higher',
              'spearman': 'higher'}


def test_absolute_gates_only_for_set_thresholds_of_declared_metrics():
  t = gates.Thresholds(max_eval_loss=2.0, min_recall_at_k=0.3,
                       min_analogy_accuracy=0.5)
  result = gates.absolute_gates({'eval_loss': 1.5, 'recall_at_k': 0.2,
                                 'spearman': -1.0}, t, DIRECTIONS)
  assert {g.name: g.passed for g in result} == {
      'absolute/eval_loss': True, 'absolute/recall_at_k': False}
  missing = gates.absolute_gates({'eval_loss': None}, gates.Thresholds(
      max_eval_loss=2.0), DIRECTIONS)
  assert not missing[0].passed and 'not computed' in missing[0].reason


def test_baseline_margin_is_relative_and_direction_aware():
  base = {'eval_loss': 2.0, 'recall_at_k': 0.5}
  margin = 0.1
  assert gates.baseline_limit(2.0, margin, False) == pytest.approx(2.2)
  assert gates.baseline_limit(0.5, margin, True) == pytest.approx(0.45)
  within = gates.baseline_gates({'eval_loss': 2.19, 'recall_at_k': 0.46},
                                base, margin, DIRECTIONS)
  assert all(g.passed for g in within)
  beyond = gates.baseline_gates({'eval_loss': 2.21, 'recall_at_k': 0.6},
                                base, margin, DIRECTIONS)
  assert {g.name: g.passed for g in beyond} == {
      'baseline/eval_loss': False, 'baseline/recall_at_k': True}
  assert 'vs baseline 2' in beyond[0].reason


def test_baseline_without_a_value_is_not_compared():
  result = gates.baseline_gates({'recall_at_k': 0.1}, {'recall_at_k': None},
                                0.05, DIRECTIONS)
  assert result[0].passed and 'not compared' in result[0].reason
  # Scored by neither (e.g. spearman without a similarity file): no gate.
  assert [g.name for g in result] == ['baseline/recall_at_k']


def test_blessed_needs_gates_and_all_passing():
  assert not gates.blessed([])
  ok = gates.restore_gate(None)
  bad = gates.restore_gate('CheckpointError: table missing')
  assert gates.blessed([ok])
  assert not gates.blessed([ok, bad])
  assert gates.summary([ok, bad]) == ('not blessed: CheckpointError: table '
                                      'missing')


POPULARITY = {'label': 'popularity ranking',
              'failure': 'no better than ranking tokens by frequency',
              'metrics': {'recall_at_k': 0.2}}
FREQUENCY = {'label': 'frequency-only model',
             'failure': 'the table predicts held-out contexts no better than '
                        'token counts do',
             'metrics': {'eval_loss': 2.6}}


def _floor(value, reference, untrained=None):
  found = POPULARITY if reference == 'popularity' else FREQUENCY
  metric = next(iter(found['metrics']))
  return gates.floor_gate(metric, value, reference, found,
                          metric == 'recall_at_k', untrained)


def test_a_floor_needs_a_strictly_better_value():
  assert _floor(0.3, 'popularity').passed
  tie = _floor(0.2, 'popularity')
  assert not tie.passed and 'ranking tokens by frequency' in tie.reason
  assert tie.name == 'popularity/recall_at_k'
  assert not _floor(None, 'popularity').passed
  nothing = gates.floor_gate('recall_at_k', None, 'popularity',
                             dict(POPULARITY, metrics={}), True)
  assert nothing.passed  # nothing to rank


def test_min_baseline_coverage_is_a_fraction():
  with pytest.raises(ValueError, match='min_baseline_coverage must be a '
                     'number >= 0 and <= 1'):
    gates.Thresholds(min_baseline_coverage=1.5)


def test_a_loss_floor_needs_a_loss_below_the_reference():
  assert _floor(2.4, 'frequency', 4.159).passed
  above = _floor(2.7, 'frequency', 4.159)
  assert not above.passed and 'no better than token counts' in above.reason
  assert above.name == 'frequency/eval_loss'
  assert not _floor(None, 'frequency', 4.159).passed


def test_a_value_at_the_untrained_one_says_the_model_learned_nothing():
  gate = _floor(4.1588, 'frequency', 4.15888)
  assert not gate.passed
  assert 'learned nothing' in gate.reason and 'trainer.epochs' in gate.reason


def test_the_dense_gate_counts_non_finite_values():
  import numpy as np
  assert gates.dense_finite_gate([np.ones([2, 3]), np.zeros([4])]).passed
  bad = gates.dense_finite_gate([np.array([1.0, np.nan, np.inf])])
  assert not bad.passed and '2 NaN/Inf values' in bad.reason


def test_a_metric_that_cannot_be_compared_says_so_and_passes():
  result = gates.baseline_gates(
      {'eval_loss': 2.5, 'recall_at_k': 0.2},
      {'eval_loss': None, 'recall_at_k': 0.21}, 0.1, DIRECTIONS,
      {'eval_loss': 'the candidate scores pairs with a contexts table'})
  by_name = {g.name: g for g in result}
  assert by_name['baseline/eval_loss'].passed
  assert 'not comparable (the candidate' in by_name['baseline/eval_loss'].reason
  assert by_name['baseline/recall_at_k'].passed


def test_a_candidate_worse_within_the_margin_passes_saying_so():
  result = gates.baseline_gates({'eval_loss': 2.1, 'recall_at_k': 0.55},
                                {'eval_loss': 2.0, 'recall_at_k': 0.5}, 0.1,
                                DIRECTIONS)
  by_name = {g.name: g for g in result}
  loss, recall = by_name['baseline/eval_loss'], by_name['baseline/recall_at_k']
  assert loss.passed and loss.reason.endswith(': ok, but worse than the '
                                              'baseline')
  assert loss.reference == 2.0 and loss.worse_than_reference()
  assert recall.passed and recall.reason.endswith(': ok')
  assert not recall.worse_than_reference()
