"""`selftest` on the command line: exit 0 when the trainers agree, 1 when
they differ (a perturbed side), 2 for bad arguments, refused before
TensorFlow is imported."""

import contextlib
import io
import os
import subprocess
import sys

import pytest

from pipelines.cli import main as cli
from tests.support import paths

SMALL = ['--tpu', '', '--steps', '4', '--vocabulary-size', '100',
         '--set', 'trainer.batch_size=64', '--set', 'table.dim=8']


def _selftest(*argv):
  return subprocess.run(
      [sys.executable, '-m', 'pipelines', 'selftest', *argv], cwd=paths.REPO,
      capture_output=True, text=True, timeout=300,
      env={**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2'})


@pytest.mark.parametrize('argv,message', [
    (['--steps', '0'], "--steps: expected an integer >= 1, got '0'"),
    (['--vocabulary-size', 'x'], '--vocabulary-size: expected an integer'),
    (['--perturb', 'everything'], "--perturb: invalid choice: 'everything'"),
    (['--set', 'trainer.batch_size=abc'], 'batch_size must be an integer'),
    (['--module-file', 'no/such.py'], '--module-file no/such.py: no such'),
])
def test_bad_arguments_exit_2_in_one_line(argv, message):
  err = io.StringIO()
  with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exited:
    sys.exit(cli.main(['selftest'] + argv))
  assert exited.value.code == 2
  assert message in err.getvalue().strip().splitlines()[-1]


@pytest.mark.slow
def test_agreement_exits_0_and_prints_the_table():
  done = _selftest(*SMALL)
  assert done.returncode == 0, done.stderr
  lines = done.stdout.strip().splitlines()
  assert lines[0].startswith('selftest: no TPU reachable')
  assert any(line.strip().startswith('tokens/accumulators') and
             line.endswith(' ok') for line in lines)
  assert lines[-1].startswith('AGREE')


@pytest.mark.slow
def test_a_perturbed_side_exits_1_naming_the_difference():
  done = _selftest(*SMALL, '--perturb', 'row')
  assert done.returncode == 1, done.stderr
  lines = done.stdout.strip().splitlines()
  assert "perturbed: B's initial tokens/parameters row 0" in lines
  assert lines[-1].startswith('DIFFER: first tokens/parameters')


@pytest.mark.slow
def test_an_unreachable_tpu_is_one_line_exit_2():
  done = _selftest('--tpu', 'grpc://127.0.0.1:1', '--steps', '2')
  assert done.returncode == 2
  err = [line for line in done.stderr.splitlines()
         if line.startswith('error: ')]
  assert len(err) == 1 and "TPU 'grpc://127.0.0.1:1'" in err[0], done.stderr
  assert done.stdout == ''


def test_a_bad_setting_is_refused_before_tensorflow_is_imported():
  probe = ('import sys\nfrom pipelines.cli import main as cli\n'
           "rc = cli.main(['selftest', '--set', 'trainer.batch_size=abc'])\n"
           "print(rc, 'tensorflow' in sys.modules)\n")
  done = subprocess.run([sys.executable, '-c', probe], cwd=paths.REPO,
                        capture_output=True, text=True, timeout=120)
  assert done.stdout.split() == ['2', 'False'], done.stderr
