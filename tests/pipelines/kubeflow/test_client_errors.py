"""submit / schedule refuse bad input and fail clearly, before or on the wire.

Bad crons, parameters and packages fail before any request is made; an
unreachable, silent or failing KFP API is a clear error, never a hang.
"""

import socket
import time

import pytest
import yaml

from pipelines.cli import main as cli
from pipelines.kubeflow import client as kubeflow_client
from tests.support.fake_kfp import FakeKfpApi


def _closed_port():
  s = socket.socket()
  s.bind(('127.0.0.1', 0))
  port = s.getsockname()[1]
  s.close()
  return port


@pytest.mark.slow
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
