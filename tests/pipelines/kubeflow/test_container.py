"""The tasks' container entrypoint: SIGTERM (a pod deleted or preempted)
stops a task in one line, exit 143, keeping what a rerun continues from.

The trainer task runs as its container would: the command, arguments and
parameters come from the compiled YAML, the executor input is what Kubeflow
Pipelines hands the pod.
"""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from pipelines import stop_signals
from pipelines.kubeflow import compile as kubeflow_compile
from pipelines.kubeflow import container
from pipelines.kubeflow import spec_edits
from tests.support import paths
from tests.support.killed_trainer import write_inputs

TRAINER = 'components.trainer.executor.Executor'


@pytest.fixture(scope='module')
def spec(tmp_path_factory):
  base = tmp_path_factory.mktemp('compiled')
  package = base / 'pipeline.yaml'
  kubeflow_compile.compile_pipeline(
      str(package), image='example/tpu-embeddings:test',
      pipeline_root=str(base / 'root'), data_root=str(base / 'data'),
      push_root=str(base / 'pushed'))
  return next(yaml.safe_load_all(package.read_text()))


def _task(spec, task):
  component = spec['components'][spec['root']['dag']['tasks'][task][
      'componentRef']['name']]
  return component, spec['deploymentSpec']['executors'][
      component['executorLabel']]['container']


def test_every_task_stops_cleanly_on_sigterm(spec):
  for task in spec['root']['dag']['tasks']:
    command = _task(spec, task)[1]['command']
    assert command == list(spec_edits.EXAMPLE_GEN_COMMAND if task ==
                           'FileBasedExampleGen' else container.COMMAND)


def _stop_then(error):
  """An entry in which a SIGTERM lands inside C code that reports it as
  `error`, the stop itself lost."""
  def entry(argv):
    del argv
    try:
      stop_signals._raise_stopped(signal.SIGTERM, None)
    except stop_signals.Stopped:
      pass
    raise error
  return entry


@pytest.fixture
def stop_handlers(monkeypatch):
  monkeypatch.setattr(stop_signals, '_RECEIVED', [])
  handlers = {s: signal.getsignal(s) for s in stop_signals.HANDLED}
  hook = sys.unraisablehook
  yield
  sys.unraisablehook = hook
  for s, handler in handlers.items():
    signal.signal(s, handler)


def test_a_stop_reported_as_another_error_still_exits_143(stop_handlers,
                                                          capsys):
  code = container.run(_stop_then(TypeError(
      'Expected `context` argument in EagerTensor constructor to have a '
      '`_handle` attribute but it did not.')), [])
  assert code == 143
  assert capsys.readouterr().err.startswith('stopped by SIGTERM in ')


def test_an_error_without_a_stop_is_raised(stop_handlers):
  def entry(argv):
    raise ValueError('bad input')
  with pytest.raises(ValueError, match='bad input'):
    container.run(entry, [])


def _trainer_input(spec, root, config):
  component, _ = _task(spec, 'EmbeddingTrainer')
  types = component['inputDefinitions']['artifacts']
  metadata = {'examples': {'span': 1, 'split_names': '["train"]'},
              'vocabulary': {}}
  return {
      'inputs': {
          'parameterValues': {'config': json.dumps(config),
                              'push_root': f'{root}/pushed',
                              'resume_root': f'{root}/resume'},
          'artifacts': {name: {'artifacts': [{
              'name': name, 'type': types[name]['artifactType'],
              'uri': f'{root}/{name}', 'metadata': metadata[name]}]}
                        for name in ('examples', 'vocabulary')}},
      'outputs': {
          'artifacts': {name: {'artifacts': [{
              'name': name, 'type': a['artifactType'],
              'uri': f'{root}/{name}'}]} for name, a in component[
                  'outputDefinitions']['artifacts'].items()},
          'outputFile': f'{root}/executor_output.json'}}


@pytest.mark.slow
def test_sigterm_stops_the_trainer_task_and_keeps_its_checkpoints(
    spec, tmp_path):
  root = str(tmp_path)
  write_inputs(root)
  config = json.loads(spec['root']['inputDefinitions']['parameters'][
      'trainer_config']['defaultValue'])
  config.update(train_steps=5000, batch_size=64, checkpoint_every=50,
                log_every=50, warm_start_from_pushed=False)
  _, task = _task(spec, 'EmbeddingTrainer')
  executor_input = json.dumps(_trainer_input(spec, root, config))
  # The image's `python` is the one with the pipeline installed.
  command = [sys.executable] + task['command'][1:]
  process = subprocess.Popen(
      command + [executor_input if a == '{{$}}' else a for a in task['args']],
      cwd=paths.REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
      text=True, env=dict(os.environ, PYTHONPATH=paths.REPO))
  deadline = time.monotonic() + 300
  while not glob.glob(f'{root}/model/checkpoint/ckpt-*.index'):
    assert process.poll() is None, process.stderr.read()[-3000:]
    assert time.monotonic() < deadline, 'no checkpoint within 300 s'
    time.sleep(0.05)
  process.send_signal(signal.SIGTERM)
  _, err = process.communicate(timeout=120)
  assert process.returncode == 143, err[-3000:]
  assert 'Traceback' not in err, err[-3000:]
  assert err.splitlines()[-1].startswith(
      f'stopped by SIGTERM in {TRAINER}; a rerun of the pipeline continues')
  # What the rerun continues from: the checkpoints and the resume record.
  assert glob.glob(f'{root}/model/checkpoint/ckpt-*.index')
  record, = glob.glob(f'{root}/resume/*.json')
  with open(record) as f:
    assert json.load(f)['model_uri'] == f'{root}/model'
