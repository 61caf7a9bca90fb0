"""A loopback KFP v2beta1 API and a small KFP package, for the client tests.

`FakeKfpApi` answers the REST calls kfp.Client makes (healthz, experiments,
runs, recurringruns) and records every request, so the tests check what
actually went over the wire.
"""

import http.server
import json
import threading
import urllib.parse

import yaml

from tpu_embeddings.kernels import library
from tpu_embeddings.training.config import TrainerConfig

API = '/apis/v2beta1'
COMPILED_TRAINER = TrainerConfig(tpu='auto', train_steps=600).to_json()


class _Handler(http.server.BaseHTTPRequestHandler):
  """Answers the KFP calls; `self.server.api` is the FakeKfpApi."""

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
    self.server.api.requests.append(entry)
    return entry

  def do_GET(self):
    api = self.server.api
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

  def do_POST(self):
    api = self.server.api
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


class FakeKfpApi:
  """A KFP v2beta1 API server on 127.0.0.1 that records requests."""

  def __init__(self, healthz_status=200):
    self.requests = []
    self.experiments = {}
    self.healthz_status = healthz_status
    self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                  _Handler)
    self.server.api = self
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


def isolate_kfp_context(tmp_path, monkeypatch):
  """Points kfp.Client's context and environment away from the user's."""
  # The skip-gram ops stay where HOME had them cached: a trainer run by a
  # test would otherwise compile them again (about 20 s of CPU).
  monkeypatch.setenv(library.CACHE, library.cache_root())
  # kfp.Client reads ~/.config/kfp/context.json; keep the user's out.
  monkeypatch.setenv('HOME', str(tmp_path / 'home'))
  for var in ('KF_PIPELINES_ENDPOINT', 'KF_PIPELINES_DEFAULT_EXPERIMENT_NAME',
              'KF_PIPELINES_OVERRIDE_EXPERIMENT_NAME'):
    monkeypatch.delenv(var, raising=False)


def write_package(tmp_path):
  """A small but complete KFP v2 YAML package (two documents, like the
  compiled one: pipeline spec + Kubernetes platform spec).

  Returns:
    (its path, the pipeline spec, the platform spec).
  """
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
