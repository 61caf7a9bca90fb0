"""The command line: every option documented, bad arguments rejected before
TensorFlow or TFX is imported and before anything is written, and a
successful command prints no error-level lines."""

import argparse
import json
import os
import re
import subprocess
import sys

import pytest

from pipelines import demo_data
from pipelines.cli import main as cli
from tests.support import paths
from tests.support import tiny_pipeline

REPO = paths.REPO


def _subparsers():
  parser = cli.build_parser()
  [sub] = [a for a in parser._actions
           if isinstance(a, argparse._SubParsersAction)]
  return sub.choices


def test_every_option_and_argument_has_help():
  commands = _subparsers()
  assert sorted(commands) == sorted([
      'demo-data', 'run', 'retrain', 'lineage', 'pushed', 'embed',
      'neighbors', 'rollback', 'compile', 'submit', 'schedule', 'selftest'])
  missing = [f'{name} {a.option_strings[0] if a.option_strings else a.dest}'
             for name, p in commands.items() for a in p._actions
             if not a.help]
  assert not missing, f'no --help text: {missing}'


# Runs each argv through cli.main in one fresh interpreter and reports the
# exit code, the error and whether TensorFlow or TFX got imported.
_PROBE = '''
import contextlib, io, json, sys
from pipelines.cli import main as cli
out = []
for argv in json.loads(sys.argv[1]):
  err = io.StringIO()
  with contextlib.redirect_stderr(err), \
contextlib.redirect_stdout(io.StringIO()):
    rc = cli.main(argv)
  out.append({'rc': rc, 'err': err.getvalue(),
              'imported': sorted(m for m in ('tensorflow', 'tfx')
                                 if m in sys.modules)})
print(json.dumps(out))
'''


def _probe(argvs):
  done = subprocess.run([sys.executable, '-c', _PROBE, json.dumps(argvs)],
                        cwd=REPO, capture_output=True, text=True, check=True,
                        timeout=120)
  return json.loads(done.stdout.strip().splitlines()[-1])


def test_bad_arguments_fail_before_tensorflow_and_create_nothing(tmp_path):
  data = tmp_path / 'data'
  (data / 'span-1').mkdir(parents=True)  # a span folder, still empty
  home = str(tmp_path / 'home')
  out = str(tmp_path / 'pipeline.yaml')
  compile_ = ['compile', '--output', out, '--image', 'img:1',
              '--pipeline-root', 'gs://b/tfx']
  cases = [
      (['run', '--data', str(data), '--home', home,
        '--set', 'trainer.train_steps=abc'], 'train_steps must be an integer'),
      (['run', '--data', str(tmp_path / 'none'), '--home', home],
       'is not a directory'),
      (['run', '--data', str(data), '--home', home, '--neighbors', '-1'],
       '--neighbors'),
      (['run', '--data', str(data), '--home', home],
       f'data root {data}: no file matches span-{{SPAN}}/* in span folder '
       'span-1; '),
      (['retrain', '--data', str(data), '--home', home,
        '--set', 'train_steps=abc'], 'train_steps must be an integer'),
      (['retrain', '--data', str(tmp_path / 'none'), '--home', home],
       'is not a directory'),
      (compile_ + ['--set', 'train_steps=abc'], 'must be an integer'),
      (compile_ + ['--tpu-topology', '2x2'], '--tpu-accelerator'),
      (compile_ + ['--cpu', 'Trainer=4'], "unknown task 'Trainer'"),
      (compile_ + ['--memory', 'EmbeddingExporter=lots'], '--memory'),
      (compile_ + ['--image', 'has space'], '--image'),
      (compile_ + ['--pipeline-root', 'gs://b/with space'],
       '--pipeline-root'),
      (['compile', '--output', str(tmp_path / 'no' / 'p.yaml'), '--image',
        'img:1', '--pipeline-root', 'gs://b'], 'does not exist'),
  ]
  results = _probe([argv for argv, _ in cases])
  for (argv, message), result in zip(cases, results):
    assert result['rc'] == 2, (argv, result)
    err = result['err'].strip()
    assert err.startswith('error: ') and message in err, (argv, err)
    assert len(err.splitlines()) == 1, (argv, err)
  assert results[-1]['imported'] == [], 'TensorFlow or TFX imported'
  assert sorted(os.listdir(tmp_path)) == ['data']  # no home, no package


@pytest.mark.slow
def test_absurd_settings_are_refused_before_any_component_runs(tmp_path):
  """A window of a billion once kept the trainer busy for minutes with no
  progress line; now every command refuses it in one line naming the bound,
  before TensorFlow or TFX is imported and before the home is created,
  though the data root holds a span the pipeline would train on."""
  data = tmp_path / 'data'
  demo_data.generate(str(data), spans=1, seed=0, shape=tiny_pipeline.TINY)
  home = str(tmp_path / 'home')
  window = ['--set', 'trainer.window=1000000000']
  cases = [
      (['run', '--data', str(data), '--home', home] + window,
       'window must be an integer >= 1 and <= 1000, got 1,000,000,000'),
      (['retrain', '--data', str(data), '--home', home] + window,
       'window must be an integer >= 1 and <= 1000'),
      (['run', '--data', str(data), '--home', home, '--set', 'dim=1000000'],
       'table parameter dim must be an integer >= 1 and <= 8192'),
      (['run', '--data', str(data), '--home', home, '--set',
        'validator.min_recall_at_k=7'], 'min_recall_at_k must be a number'),
      (['compile', '--output', str(tmp_path / 'p.yaml'), '--image', 'img:1',
        '--pipeline-root', 'gs://b/tfx'] + window,
       'window must be an integer >= 1 and <= 1000'),
  ]
  results = _probe([argv for argv, _ in cases])
  for (argv, message), result in zip(cases, results):
    err = result['err'].strip()
    assert result['rc'] == 2, (argv, result)
    assert err.startswith('error: ') and message in err, (argv, err)
    assert len(err.splitlines()) == 1, (argv, err)
    assert result['imported'] == [], (argv, 'TensorFlow or TFX imported')
  assert sorted(os.listdir(tmp_path)) == ['data']  # no home, no package


@pytest.mark.slow
def test_a_successful_command_prints_no_error_lines(tmp_path):
  """`compile` imports TensorFlow and TFX; XLA's factory lines are gone."""
  out = str(tmp_path / 'pipeline.yaml')
  env = dict(os.environ)
  env.pop('TF_CPP_MIN_LOG_LEVEL', None)
  done = subprocess.run(
      [sys.executable, '-m', 'pipelines', 'compile', '--output', out,
       '--image', 'img:1', '--pipeline-root', 'gs://b/tfx'],
      cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
  assert done.returncode == 0, done.stderr
  assert os.path.isfile(out)
  error_lines = [l for l in done.stderr.splitlines()
                 if re.match(r'(\S+ \S+: )?E\d* ', l) or 'Unable to register'
                 in l]
  assert not error_lines, done.stderr


def test_settings_and_cluster_checks_import_without_tensorflow():
  modules = ['tpu_embeddings.core.settings', 'pipelines.config',
             'pipelines.cli.main',
             'pipelines.kubeflow.flags', 'pipelines.kubeflow.resources',
             'pipelines.kubeflow.parameters', 'pipelines.kubeflow.package']
  code = ('import importlib, sys\n'
          f'for m in {modules!r}: importlib.import_module(m)\n'
          'from pipelines.cli import main as cli\n'
          'cli.build_parser()\n'
          "print(sorted(m for m in ('tensorflow', 'tfx', 'kfp', 'absl') "
          'if m in sys.modules))\n')
  done = subprocess.run([sys.executable, '-c', code], cwd=REPO,
                        capture_output=True, text=True, check=True,
                        timeout=120)
  assert done.stdout.strip() == '[]'
