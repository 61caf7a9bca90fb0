"""The run summary's `validation:` line: a blessed model worse than the
served one (within the margin) says so with both figures, as the
validator's report says it."""

from pipelines.local import runner as local_runner
from pipelines.local import summary_notes
from tpu_embeddings.validation import gates
from tpu_embeddings.validation import report_data


def _summary(candidate, baseline, directions, blessed_alone=True):
  report = {'baseline_version': 1, 'baseline_unreadable': [],
            'parameters': {'thresholds': {'regression_margin': 0.05}},
            'metrics': {'candidate': candidate, 'baseline': baseline},
            'warnings': []}
  found = [gates.restore_gate(None if blessed_alone else 'CheckpointError: '
                              'no table')]
  found += gates.baseline_gates(candidate, baseline, 0.05, directions)
  report = report_data.finish(report, found)
  summary = {'paths': {'metadata': '/h/metadata.sqlite'},
             'blessed': report['blessed']}
  summary.update(summary_notes.from_report(report))
  return local_runner.format_summary(summary).splitlines()


def test_a_worse_module_model_is_blessed_with_both_figures():
  lines = _summary({'rmse': 1.117}, {'rmse': 1.083}, {'rmse': 'lower'})
  assert lines[0] == (
      'validation: BLESSED, but worse than the served v1 in rmse: 1.117 '
      'against 1.083 (within the margin 0.05, validator.regression_margin)')
  assert 'candidate metrics: rmse=1.117' in lines
  assert 'baseline metrics: rmse=1.083' in lines


def test_a_worse_skipgram_loss_is_said_the_same_way():
  lines = _summary({'eval_loss': 2.9, 'recall_at_k': 0.31},
                   {'eval_loss': 2.8, 'recall_at_k': 0.3},
                   {'eval_loss': 'lower', 'recall_at_k': 'higher'})
  assert lines[0] == (
      'validation: BLESSED, but worse than the served v1 in eval_loss: 2.9 '
      'against 2.8 (within the margin 0.05, validator.regression_margin)')


def test_a_better_model_is_just_blessed_and_a_refused_one_says_why():
  assert _summary({'rmse': 1.0}, {'rmse': 1.083},
                  {'rmse': 'lower'})[0] == 'validation: BLESSED'
  refused = _summary({'rmse': 1.117}, {'rmse': 1.083}, {'rmse': 'lower'},
                     blessed_alone=False)[0]
  assert refused == ('validation: NOT BLESSED (restore: CheckpointError: no '
                     'table)')
