"""The exit code of `run` and `retrain` from how their run ended: a model
that validation refused is a failure a scheduler sees (exit 6, one line
naming the gates), a blessed one or a run without validation is not."""

from pipelines.cli import pipeline_commands

REFUSED = {
    'blessed': False,
    'failed_gates': [
        {'name': 'recall_at_k', 'passed': False,
         'reason': 'candidate 0.41 < 1.0 (absolute)'},
        {'name': 'health/tokens/finite', 'passed': False,
         'reason': 'NaN/Inf values'},
    ],
}


def test_a_refused_model_exits_6_with_one_line_naming_each_gate(capsys):
  assert pipeline_commands.verdict_code(REFUSED) == 6
  out, err = capsys.readouterr()
  assert out == ''
  assert err == ('error: the model was not blessed, nothing was pushed: '
                 'recall_at_k: candidate 0.41 < 1.0 (absolute); '
                 'health/tokens/finite: NaN/Inf values\n')


def test_a_refusal_without_gates_points_at_the_report(capsys):
  assert pipeline_commands.verdict_code({'blessed': False}) == 6
  assert capsys.readouterr().err.endswith('pushed: see report\n')


def test_a_blessed_model_or_a_run_without_validation_exits_0(capsys):
  assert pipeline_commands.verdict_code({'blessed': True}) == 0
  assert pipeline_commands.verdict_code({}) == 0
  assert capsys.readouterr() == ('', '')
