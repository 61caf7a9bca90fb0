"""submit / schedule drive the real kfp.Client against a loopback KFP API.

The server below answers the KFP v2beta1 REST calls the client makes
(healthz, experiments, runs, recurringruns) and records every request, so the
tests check what actually went over the wire.
"""

import http.server
import json
import socket
import threading
import time
import urllib.parse

import pytest
import yaml

from components.trainer.config import TrainerConfig
from pipelines.cli import main as cli
from pipelines.kubeflow import client as kubeflow_client

API = '/apis/v2beta1'
COMPILED_TRAINER = TrainerConfig(tpu='auto', train_steps=600).to_json()


class FakeKfpApi:
  """A KFP v2beta1 API server on 127.0.0.1 that records requests."""

  def __init__(self, healthz_status=200):
    self.requests = []
    self.experiments = {}
    self.healthz_status = healthz_status
    api = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def log_message(self, *args):
        pass

      def _reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

      def _record(self):
        url = urllib.parse.urlparse(self.path)
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        entry = {'method': self.command, 'path': url.path,
                 'query': urllib.parse.parse_qs(url.query),
                 'body': json.loads(raw) if raw else None}
        api.requests.append(entry)
        return entry

      def do_GET(self):  # pylint: disable=invalid-name
        req = self._record()
        if req['path'] == f'{API}/healthz':
          if api.healthz_status != 200:
            return self._reply(api.healthz_status,
                               {'error': 'unavailable', 'code': 14,
                                'message': 'backend down'})
          return self._reply(200, {'multi_user': False})
        if req['path'] == f'{API}/experiments':
          predicate = json.loads(req['query']['filter'][0])['predicates'][0]
          wanted = predicate['stringValue']
          found = [e for e in api.experiments.values()
                   if e['display_name'] == wanted]
          return self._reply(200, {'experiments': found,
                                   'total_size': len(found)})
        return self._reply(404, {'error': 'not found', 'code': 5,
                                 'message': f'no route {req["path"]}'})

      def do_POST(self):  # pylint: disable=invalid-name
        req = self._record()
        body = req['body'] or {}
        if req['path'] == f'{API}/experiments':
          exp_id = f'exp-{len(api.experiments) + 1}'
          exp = {'experiment_id': exp_id,
                 'display_name': body['display_name']}
          api.experiments[exp_id] = exp
          return self._reply(200, exp)
        if req['path'] == f'{API}/runs':
          return self._reply(200, dict(body, run_id='run-1', state='PENDING'))
        if req['path'] == f'{API}/recurringruns':
          return self._reply(200, dict(body, recurring_run_id='rr-1',
                                       status='ENABLED'))
        return self._reply(404, {'error': 'not found', 'code': 5,
                                 'message': f'no route {req["path"]}'})

    self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    self.host = f'http://127.0.0.1:{self.server.server_address[1]}'
    self.thread = threading.Thread(target=self.server.serve_forever,
                                   daemon=True)

  def __enter__(self):
    self.thread.start()
    return self

  def __exit__(self, *exc):
    self.server.shutdown()
    self.server.server_close()

  def posted(self, path):
    return [r['body'] for r in self.requests
            if r['method'] == 'POST' and r['path'] == f'{API}/{path}']


@pytest.fixture(autouse=True)
def _isolated_kfp_context(tmp_path, monkeypatch):
  # kfp.Client reads ~/.config/kfp/context.json; keep the user's out.
  monkeypatch.setenv('HOME', str(tmp_path / 'home'))
  for var in ('KF_PIPELINES_ENDPOINT', 'KF_PIPELINES_DEFAULT_EXPERIMENT_NAME',
              'KF_PIPELINES_OVERRIDE_EXPERIMENT_NAME'):
    monkeypatch.delenv(var, raising=False)


@pytest.fixture
def package(tmp_path):
  """A small but complete KFP v2 YAML package (two documents, like the
  compiled one: pipeline spec + Kubernetes platform spec)."""
  spec = {
      'pipelineInfo': {'name': 'tpu-embeddings'},
      'schemaVersion': '2.1.0',
      'sdkVersion': 'tfx-1.15.1',
      'defaultPipelineRoot': 'gs://compiled-bucket/tfx',
      'root': {
          'inputDefinitions': {'parameters': {
              'note': {'parameterType': 'STRING', 'defaultValue': 'x'},
              'data_root': {'parameterType': 'STRING', 'isOptional': True,
                            'defaultValue': 'gs://compiled-bucket/corpus'},
              'trainer_config': {'parameterType': 'STRING',
                                 'isOptional': True,
                                 'defaultValue': COMPILED_TRAINER}}},
          'dag': {'tasks': {'EmbeddingTrainer': {
              'taskInfo': {'name': 'EmbeddingTrainer'},
              'componentRef': {'name': 'EmbeddingTrainer'}}}},
      },
      'components': {'EmbeddingTrainer': {
          'executorLabel': 'EmbeddingTrainer_executor'}},
      'deploymentSpec': {'executors': {'EmbeddingTrainer_executor': {
          'container': {'image': 'gcr.io/p/img:1',
                        'resources': {'accelerator': {
                            'type': 'google.com/tpu', 'count': '4'}}}}}},
  }
  platform = {'platforms': {'kubernetes': {'deploymentSpec': {'executors': {
      'EmbeddingTrainer_executor': {'nodeSelector': {'labels': {
          'cloud.google.com/gke-tpu-topology': '2x2'}}}}}}}}
  path = tmp_path / 'pipeline.yaml'
  path.write_text('# header\n' + yaml.safe_dump_all([spec, platform]))
  return path, spec, platform


def _closed_port():
  s = socket.socket()
  s.bind(('127.0.0.1', 0))
  port = s.getsockname()[1]
  s.close()
  return port


def test_submit_sends_package_pipeline_root_and_arguments(package):
  path, spec, platform = package
  with FakeKfpApi() as api:
    submitted = kubeflow_client.submit(
        api.host, str(path), pipeline_root='gs://run-bucket/tfx',
        arguments={'note': 'hello'}, run_name='nightly',
        experiment='embeddings-exp')
  assert (submitted.run_id, submitted.experiment_id) == ('run-1', 'exp-1')
  assert api.posted('experiments') == [
      {'display_name': 'embeddings-exp', 'namespace': ''}]
  assert [r['path'] for r in api.requests].count(f'{API}/healthz') == 1
  [run] = api.posted('runs')
  assert run['display_name'] == 'nightly'
  assert run['experiment_id'] == 'exp-1'
  # Both documents of the package arrive, unchanged.
  assert run['pipeline_spec']['pipeline_spec'] == spec
  assert run['pipeline_spec']['platform_spec'] == platform
  assert run['runtime_config'] == {'pipeline_root': 'gs://run-bucket/tfx',
                                   'parameters': {'note': 'hello'}}


def test_submit_defaults_to_the_compiled_pipeline_root(package):
  path, _, _ = package
  with FakeKfpApi() as api:
    submitted = kubeflow_client.submit(api.host, str(path))
  [run] = api.posted('runs')
  assert run['runtime_config']['pipeline_root'] == 'gs://compiled-bucket/tfx'
  assert submitted.pipeline_root == 'gs://compiled-bucket/tfx'


def test_schedule_sends_the_six_field_cron_as_given(package):
  path, spec, _ = package
  with FakeKfpApi() as api:
    scheduled = kubeflow_client.schedule(
        api.host, str(path), cron='0 0 3 * * *',
        pipeline_root='gs://run-bucket/tfx', name='daily')
  assert scheduled.recurring_run_id == 'rr-1'
  [job] = api.posted('recurringruns')
  assert job['trigger'] == {'cron_schedule': {'cron': '0 0 3 * * *'}}
  assert job['display_name'] == 'daily'
  assert job['mode'] == 'ENABLE'
  assert job['max_concurrency'] == 1
  assert job['no_catchup'] is True
  assert job['experiment_id'] == scheduled.experiment_id
  assert job['pipeline_spec']['pipeline_spec'] == spec
  assert job['runtime_config']['pipeline_root'] == 'gs://run-bucket/tfx'


def test_schedule_command_end_to_end(package, capsys):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['schedule', '--host', api.host, '--package', str(path),
                   '--cron', '0 30 2 * * MON-FRI'])
  assert rc == 0
  assert api.posted('recurringruns')[0]['trigger']['cron_schedule'][
      'cron'] == '0 30 2 * * MON-FRI'
  assert 'scheduled recurring run rr-1' in capsys.readouterr().out


def test_submit_command_end_to_end(package, capsys):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['submit', '--host', api.host, '--package', str(path),
                   '--param', 'note=hi', '--pipeline-root', 'gs://b/r'])
  assert rc == 0
  [run] = api.posted('runs')
  assert run['runtime_config']['parameters'] == {'note': 'hi'}
  assert 'submitted run run-1' in capsys.readouterr().out


@pytest.mark.parametrize('cron, message', [
    ('0 3 * * *', "has 5 fields; Kubeflow Pipelines cron has 6, seconds "
     "first: '0 0 3 * * *'"),
    ('0 0 25 * * *', 'hours field'),
    ('0 0 3 * * * *', 'has 7 fields'),
    ('0 0 3 10-2 * *', 'reversed'),
    ('*/0 * * * * *', 'bad step'),
    ('@fortnightly', 'unknown descriptor'),
])
def test_bad_cron_is_one_clear_line_before_any_request(package, capsys, cron,
                                                       message):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['schedule', '--host', api.host, '--package', str(path),
                   '--cron', cron])
  err = capsys.readouterr().err.strip()
  assert rc == 2
  assert err.startswith('error: --cron') and message in err
  assert len(err.splitlines()) == 1
  assert not api.requests


def test_unreachable_host_fails_clearly_and_fast(package, capsys):
  path, _, _ = package
  host = f'http://127.0.0.1:{_closed_port()}'
  start = time.monotonic()
  rc = cli.main(['submit', '--host', host, '--package', str(path),
                 '--timeout', '2'])
  elapsed = time.monotonic() - start
  err = capsys.readouterr().err.strip()
  assert rc == 2
  assert err.startswith(f'error: cannot reach Kubeflow Pipelines at {host}')
  assert 'connection refused' in err and len(err.splitlines()) == 1
  assert elapsed < 10


def test_silent_host_times_out_instead_of_hanging(package):
  path, _, _ = package
  listener = socket.socket()  # accepts connections, never answers
  listener.bind(('127.0.0.1', 0))
  listener.listen(8)
  host = f'http://127.0.0.1:{listener.getsockname()[1]}'
  start = time.monotonic()
  try:
    with pytest.raises(RuntimeError, match=r'within 1 s \(timed out\)'):
      kubeflow_client.schedule(host, str(path), cron='0 0 3 * * *',
                               timeout=1)
  finally:
    listener.close()
  assert time.monotonic() - start < 10


def test_api_error_names_status_and_message(package):
  path, _, _ = package
  with FakeKfpApi(healthz_status=503) as api:
    with pytest.raises(RuntimeError) as e:
      kubeflow_client.submit(api.host, str(path), timeout=2)
  assert 'answered HTTP 503' in str(e.value)
  assert 'backend down' in str(e.value)
  assert api.host in str(e.value)


def test_bad_inputs_fail_before_contacting_the_host(tmp_path, package):
  path, _, _ = package
  host = f'http://127.0.0.1:{_closed_port()}'
  with pytest.raises(FileNotFoundError, match='no such file'):
    kubeflow_client.submit(host, str(tmp_path / 'missing.yaml'))
  json_path = tmp_path / 'pipeline.json'
  json_path.write_text('{}')
  with pytest.raises(ValueError, match=r'expected a \.yaml file'):
    kubeflow_client.submit(host, str(json_path))
  junk = tmp_path / 'junk.yaml'
  junk.write_text('pipelineInfo: {name: x}\nnot_a_field: 1\n')
  with pytest.raises(ValueError, match='is not a KFP pipeline spec'):
    kubeflow_client.submit(host, str(junk))
  with pytest.raises(ValueError, match='--param nope: the pipeline has no'):
    kubeflow_client.submit(host, str(path), arguments={'nope': 1})
  with pytest.raises(ValueError, match='--host'):
    kubeflow_client.submit('localhost:8080', str(path))
  no_root = tmp_path / 'no_root.yaml'
  docs = list(yaml.safe_load_all(path.read_text()))
  del docs[0]['defaultPipelineRoot']
  no_root.write_text(yaml.safe_dump_all(docs))
  with pytest.raises(ValueError, match='--pipeline-root'):
    kubeflow_client.submit(host, str(no_root))


def test_submit_sets_roots_and_config_fields_at_run_time(package, capsys):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['submit', '--host', api.host, '--package', str(path),
                   '--param', 'data_root=gs://new-bucket/corpus',
                   '--param', 'trainer_config.train_steps=20000',
                   '--param', 'trainer_config={"window": 5}'])
  assert rc == 0, capsys.readouterr().err
  [run] = api.posted('runs')
  sent = run['runtime_config']['parameters']
  assert sent['data_root'] == 'gs://new-bucket/corpus'
  trainer = TrainerConfig.from_json(sent['trainer_config'])
  assert (trainer.train_steps, trainer.window, trainer.tpu) == (20000, 5,
                                                                'auto')
  assert set(sent) == {'data_root', 'trainer_config'}  # the rest: defaults


def test_schedule_sets_parameters_of_every_scheduled_run(package, capsys):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['schedule', '--host', api.host, '--package', str(path),
                   '--cron', '0 0 3 * * *',
                   '--param', 'trainer_config.batch_size=1024'])
  assert rc == 0, capsys.readouterr().err
  [job] = api.posted('recurringruns')
  assert TrainerConfig.from_json(job['runtime_config']['parameters'][
      'trainer_config']).batch_size == 1024


@pytest.mark.parametrize('param, message', [
    ('nope=1', '--param nope: the pipeline has no such parameter'),
    ('trainer_config.train_steps=abc', 'train_steps must be an integer'),
    ('trainer_config.tpu=', 'fixed when compiling'),
])
def test_bad_parameter_is_one_line_before_any_request(package, capsys, param,
                                                      message):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['submit', '--host', api.host, '--package', str(path),
                   '--param', param])
  err = capsys.readouterr().err.strip()
  assert rc == 2 and err.startswith('error: --param') and message in err
  assert len(err.splitlines()) == 1
  assert not api.requests
