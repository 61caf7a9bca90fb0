"""`compile --selftest`: one task running the self-test on the trainer's
TPU node pool, loadable by the kfp SDK; its command runs as compiled."""

import os
import subprocess
import sys

import kfp.components
import pytest
from google.protobuf import json_format

from pipelines.cli import main as cli
from pipelines.kubeflow import selftest_pipeline
from pipelines.kubeflow.flags import TpuRequest
from pipelines.kubeflow.resources import TaskResources
from tests.support import interaction_fixtures
from tests.support import paths
from tests.support.compiled_package import IMAGE
from tests.support.compiled_package import executor
from tests.support.compiled_package import load

SETTINGS = ['trainer.batch_size=64', 'trainer.learning_rate_decay=false']


def _compile(tmp_path, module_file='', tpu=('tpu-v5-lite-podslice', '2x4'),
             steps=7):
  path = str(tmp_path / 'selftest.yaml')
  selftest_pipeline.compile_selftest(
      path, IMAGE, 'gs://b/tfx', TpuRequest.parse(*tpu) if tpu else None,
      TaskResources(8, 20.0), steps, SETTINGS, module_file)
  return path


def test_one_task_on_the_tpu_node_pool(tmp_path):
  path = _compile(tmp_path)
  component = kfp.components.load_component_from_file(path)
  assert list(component.pipeline_spec.root.dag.tasks) == ['selftest']
  spec, platform = load(path)
  label, task = executor(spec, 'selftest')
  container = task['container']
  assert container['image'] == IMAGE
  assert container['command'] == ['python', '-m', 'pipelines', 'selftest']
  assert container['args'] == ['--tpu', 'auto', '--steps', '7',
                               '--set', SETTINGS[0], '--set', SETTINGS[1]]
  assert container['resources'] == {
      'cpuRequest': 8, 'cpuLimit': 8, 'memoryRequest': 20.0,
      'memoryLimit': 20.0,
      'accelerator': {'type': 'google.com/tpu', 'count': '8'}}
  assert container['env'] == [{'name': 'TPU_NAME', 'value': 'local'}]
  assert json_format.MessageToDict(component.platform_spec) == platform
  selectors = platform['platforms']['kubernetes']['deploymentSpec'][
      'executors'][label]['nodeSelector']['labels']
  assert selectors == {
      'cloud.google.com/gke-tpu-accelerator': 'tpu-v5-lite-podslice',
      'cloud.google.com/gke-tpu-topology': '2x4'}
  assert spec['root']['dag']['tasks']['selftest']['cachingOptions'] == {}


def test_a_multi_host_slice_is_refused_writing_nothing(tmp_path):
  with pytest.raises(ValueError, match='spans 4 hosts'):
    _compile(tmp_path, tpu=('tpu-v4-podslice', '2x2x4'))
  assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_the_compiled_command_runs_the_module_files_selftest(tmp_path):
  """The task's command and environment, run here (no TPU: TPU_NAME left
  out, so the CPU implementations are compared): exit 0 and the table."""
  path = _compile(tmp_path, interaction_fixtures.MODULE_FILE, tpu=None,
                  steps=2)
  spec, = load(path)
  container = executor(spec, 'selftest')[1]['container']
  env = {e['name']: e['value'] for e in container['env']}
  with open(interaction_fixtures.MODULE_FILE) as f:
    assert env[selftest_pipeline.MODULE_ENV] == f.read()
  # `python` on PATH is this interpreter, as the image's is its own.
  search = os.pathsep.join([os.path.dirname(sys.executable),
                            os.environ.get('PATH', '')])
  done = subprocess.run(
      container['command'] + container['args'], cwd=paths.REPO,
      capture_output=True, text=True, timeout=300,
      env={**os.environ, **env, 'PATH': search, 'TF_CPP_MIN_LOG_LEVEL': '2'})
  assert done.returncode == 0, done.stderr[-2000:]
  lines = done.stdout.strip().splitlines()
  assert 'module file /tmp/selftest_module.py' in lines[3]
  assert lines[-1].startswith('AGREE')


def _compile_command(cwd, monkeypatch, capsys, *argv):
  """(exit code, stdout, stderr) of `python -m pipelines compile --selftest
  <argv>` in `cwd`, run here."""
  monkeypatch.chdir(cwd)
  code = cli.main(['compile', '--selftest', '--image', IMAGE,
                   '--pipeline-root', 'gs://b/tfx', *argv])
  printed = capsys.readouterr()
  return code, printed.out, printed.err


def test_the_command_never_overwrites_the_pipeline_package(tmp_path,
                                                           monkeypatch,
                                                           capsys):
  (tmp_path / 'kubeflow').mkdir()
  code, out, err = _compile_command(
      tmp_path, monkeypatch, capsys, '--tpu-accelerator', 'tpu-v4-podslice',
      '--tpu-topology', '2x2x1', '--selftest-steps', '3')
  assert code == 0, err
  assert os.listdir(tmp_path / 'kubeflow') == ['selftest.yaml']
  assert out.startswith('wrote kubeflow/selftest.yaml: one task, '
                        '`selftest --steps 3` on 4 google.com/tpu')
  (tmp_path / 'settings.json').write_text('{"trainer": {"batch_size": 64}}')
  code, _, err = _compile_command(tmp_path, monkeypatch, capsys, '--config',
                                  'settings.json')
  assert code == 2
  assert 'error: --config with --selftest: give the settings as --set' in err


def test_a_local_pipeline_root_is_named_on_stderr(tmp_path, monkeypatch,
                                                   capsys):
  """The self-test package has one root, the pipeline root: a local one is
  warned about once; the package is still written."""
  (tmp_path / 'kubeflow').mkdir()
  monkeypatch.chdir(tmp_path)
  code = cli.main(['compile', '--selftest', '--image', IMAGE,
                   '--pipeline-root', str(tmp_path / 'tfx')])
  err = capsys.readouterr().err
  assert code == 0, err
  assert os.listdir(tmp_path / 'kubeflow') == ['selftest.yaml']
  warned = [line for line in err.splitlines()
            if line.startswith('warning: ')]
  assert warned == [f'warning: --pipeline-root {tmp_path / "tfx"} is a local '
                    "path: the pods cannot see this machine's disk; give a "
                    'root they can reach, e.g. gs://bucket/path'], err
