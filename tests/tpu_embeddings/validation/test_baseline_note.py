"""A blessed candidate worse than its baseline (within the margin) says so,
with both figures, on every metric in the direction METRICS gives."""

from tpu_embeddings.validation import baseline_note
from tpu_embeddings.validation import gates
from tpu_embeddings.validation import report_data

# A module model's RMSE and a skip-gram's held-out loss and recall: the
# same path, each in its own direction.
DIRECTIONS = {'rmse': 'lower', 'eval_loss': 'lower', 'recall_at_k': 'higher'}


def _finished(candidate, baseline, margin=0.05, unreadable=(), extra=()):
  report = {'baseline_version': 1, 'baseline_unreadable': list(unreadable),
            'parameters': {'thresholds': {'regression_margin': margin}}}
  found = [gates.restore_gate(None), *extra] + gates.baseline_gates(
      candidate, baseline, margin, DIRECTIONS)
  return report_data.finish(report, found)


def test_a_worse_rmse_within_the_margin_is_said_with_both_figures():
  report = _finished({'rmse': 1.117}, {'rmse': 1.083})
  assert report['blessed']
  assert report['worse_than_baseline'] == (
      'worse than the served v1 in rmse: 1.117 against 1.083 (within the '
      'margin 0.05, validator.regression_margin)')
  assert report['summary'] == (
      'blessed: all 2 gates passed, but worse than the served v1 in rmse: '
      '1.117 against 1.083 (within the margin 0.05, '
      'validator.regression_margin)')


def test_each_worse_metric_in_its_own_direction():
  report = _finished({'eval_loss': 2.05, 'recall_at_k': 0.48, 'rmse': 0.9},
                     {'eval_loss': 2.0, 'recall_at_k': 0.5, 'rmse': 1.0},
                     margin=0.1)
  assert report['worse_than_baseline'] == (
      'worse than the served v1 in eval_loss: 2.05 against 2 and '
      'recall_at_k: 0.48 against 0.5 (within the margin 0.1, '
      'validator.regression_margin)')


def test_a_better_or_equal_candidate_says_nothing():
  report = _finished({'rmse': 1.0, 'recall_at_k': 0.5},
                     {'rmse': 1.083, 'recall_at_k': 0.5})
  assert report['blessed'] and report['worse_than_baseline'] == ''
  assert report['summary'] == 'blessed: all 3 gates passed'


def test_a_model_not_blessed_gives_its_reasons_not_the_note():
  report = _finished({'rmse': 1.117}, {'rmse': 1.083},
                     extra=[gates.restore_gate('CheckpointError: no table')])
  assert not report['blessed'] and report['worse_than_baseline'] == ''
  assert 'worse than the served' not in report['summary']


def test_figures_close_together_are_shown_until_they_differ():
  assert baseline_note.figures(1.08301, 1.083) == ('1.08301', '1.083')
  assert baseline_note.figures(0.25, 0.5) == ('0.25', '0.5')
  report = _finished({'rmse': 1.0831}, {'rmse': 1.0830})
  assert 'rmse: 1.0831 against 1.083 ' in report['worse_than_baseline']


def test_a_baseline_not_the_newest_push_is_not_called_the_served_one():
  report = _finished({'rmse': 1.117}, {'rmse': 1.083}, unreadable=[
      {'version': 2, 'path': '/p/serving/2', 'error': 'damaged'}])
  assert report['worse_than_baseline'].startswith(
      'worse than v1, the newest readable pushed version, in rmse: ')
