"""The TPU side as far as a CPU allows: resolver paths and TPUEmbedding shapes.
"""

import contextlib
import http.server
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.support import interaction_fixtures
from tests.support import tpu_shapes
from tpu_embeddings.models import spec_vocabularies
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec import embedding_variables
from tpu_embeddings.training import cpu_adapter
from tpu_embeddings.training import device

B, K, D = 8, 3, 4


def test_empty_tpu_means_cpu():
  choice = device.choose('', environ={'TPU_NAME': 'my-tpu'})
  assert choice.kind == 'cpu'


def test_auto_without_a_tpu_in_the_environment_chooses_cpu_and_says_so(
    caplog):
  with caplog.at_level('INFO', logger='absl'):
    choice = device.choose('auto', environ={})
  assert choice.kind == 'cpu'
  assert 'EmbeddingTrainer device: CPU' in caplog.text
  assert 'TPU_NAME' in caplog.text


@pytest.mark.parametrize('variable', device.TPU_ENVIRONMENT_VARIABLES)
def test_auto_with_a_tpu_in_the_environment_chooses_it(variable, caplog):
  with caplog.at_level('INFO', logger='absl'):
    choice = device.choose('auto', environ={variable: 'x'})
  assert choice.kind == 'tpu' and choice.tpu is None
  assert variable in caplog.text


def test_no_tpu_anywhere_is_what_the_resolver_itself_reports(monkeypatch):
  for variable in device.TPU_ENVIRONMENT_VARIABLES:
    monkeypatch.delenv(variable, raising=False)
  with pytest.raises(ValueError, match='Please provide a TPU Name'):
    tf.distribute.cluster_resolver.TPUClusterResolver()


def test_a_named_tpu_that_cannot_be_resolved_is_a_clear_error(monkeypatch):
  # Name lookups go through the GCE metadata server, absent here.
  monkeypatch.setenv('GCE_METADATA_HOST', '127.0.0.1:9')
  choice = device.choose('no-such-tpu')
  assert choice.kind == 'tpu'
  with pytest.raises(RuntimeError) as e:
    device.connect(choice)
  message = str(e.value)
  assert "'no-such-tpu'" in message and 'tpu=""' in message
  assert '\n' not in message


def test_an_unreachable_grpc_tpu_fails_fast_instead_of_falling_back():
  with socket.socket() as s:  # a port nobody listens on
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
  started = time.monotonic()
  with pytest.raises(RuntimeError, match=f'127.0.0.1:{port}'):
    device.connect(device.choose(f'grpc://127.0.0.1:{port}'))
  assert time.monotonic() - started < 30


def test_auto_with_an_unreachable_tpu_in_the_environment_is_an_error(
    monkeypatch):
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
  monkeypatch.setenv('TPU_NAME', f'grpc://127.0.0.1:{port}')
  choice = device.choose('auto')
  assert choice.kind == 'tpu'
  with pytest.raises(RuntimeError, match='cannot be reached'):
    device.connect(choice)


@contextlib.contextmanager
def plain_http_server():
  """An address that answers, but HTTP/1.1 instead of a TPU's gRPC."""
  server = http.server.ThreadingHTTPServer(
      ('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)
  thread = threading.Thread(target=server.serve_forever, daemon=True)
  thread.start()
  try:
    yield server.server_address[1]
  finally:
    server.shutdown()
    server.server_close()


def test_an_address_that_answers_but_is_not_a_tpu_is_one_line_not_an_abort():
  # TF's own gRPC client aborts the whole process on this (rc 134).
  with plain_http_server() as port:
    started = time.monotonic()
    with pytest.raises(RuntimeError) as e:
      device.connect(device.choose(f'grpc://127.0.0.1:{port}'))
  message = str(e.value)
  assert f'127.0.0.1:{port}' in message and 'not a TPU' in message
  assert 'HTTP/2' in message and 'tpu=""' in message
  assert '\n' not in message
  assert time.monotonic() - started < 30


def test_an_address_that_accepts_but_never_answers_times_out_with_one_line(
    monkeypatch):
  monkeypatch.setattr(device.tpu_probe, 'RPC_TIMEOUT_SECONDS', 1.0)
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    s.listen()
    port = s.getsockname()[1]
    with pytest.raises(RuntimeError) as e:
      device.connect(device.choose(f'grpc://127.0.0.1:{port}'))
  message = str(e.value)
  assert f'127.0.0.1:{port}' in message and 'no answer' in message
  assert '\n' not in message


@pytest.fixture(name='cpu_worker_port')
def fixture_cpu_worker_port():
  """A real TensorFlow gRPC worker (no TPU) in its own process."""
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
  worker = subprocess.Popen(
      [sys.executable, '-c',
       'import sys, tensorflow as tf; '
       'tf.distribute.Server(tf.train.ClusterSpec({"worker": '
       f'["localhost:{port}"]}}), job_name="worker", task_index=0).join()'],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  try:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
      with contextlib.suppress(OSError), socket.create_connection(
          ('127.0.0.1', port), timeout=1):
        break
      time.sleep(0.2)
    yield port
  finally:
    worker.kill()
    worker.wait()


@pytest.mark.slow
def test_the_probe_reads_the_devices_of_a_real_tensorflow_worker(
    cpu_worker_port):
  seen = device.tpu_probe.probe(f'127.0.0.1:{cpu_worker_port}')
  assert seen.error is None
  assert seen.device_types == ['CPU']


@pytest.mark.slow
def test_a_tensorflow_worker_without_a_tpu_is_refused_before_connecting(
    cpu_worker_port):
  with pytest.raises(RuntimeError) as e:
    device.connect(device.choose(f'grpc://127.0.0.1:{cpu_worker_port}'))
  message = str(e.value)
  assert f'127.0.0.1:{cpu_worker_port}' in message
  assert 'no TPU device' in message and 'CPU' in message
  assert '\n' not in message


def test_a_probe_that_dies_by_a_signal_is_reported_not_propagated(
    monkeypatch):
  # Stands in for a gRPC client that aborts: the probe process is killed.
  monkeypatch.setattr(device.tpu_probe, '_probe_command', lambda endpoint: [
      sys.executable, '-c', 'import os, signal; os.abort()'])
  with pytest.raises(RuntimeError) as e:
    device.connect(device.choose('grpc://127.0.0.1:1'))
  message = str(e.value)
  assert '127.0.0.1:1' in message and 'SIGABRT' in message
  assert '\n' not in message


def batch():
  rng = np.random.default_rng(0)
  return {'target': tf.constant(rng.integers(0, 20, B), tf.int32),
          'context': tf.constant(rng.integers(0, 20, B), tf.int32),
          'negatives': tf.constant(rng.integers(0, 20, (B, K)), tf.int32)}


@pytest.mark.parametrize('optimizer', ['sgd', 'adagrad', 'adam', 'ftrl'])
def test_tpu_embedding_accepts_the_spec_configs_in_cpu_mode(optimizer):
  spec = skipgram_spec(dim=D, optimizer=optimizer, vocabulary_size=20)
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  assert set(embedding_variables.table_variables(embedding)['tokens']) == {
      'parameters', *spec.optimizer.slot_names}


def test_tpu_activation_shapes_equal_the_cpu_adapters():
  spec = skipgram_spec(dim=D, vocabulary_size=20)
  # The mid-level API's own rules, as enqueue applies them.
  inputs, activations = tpu_shapes.enqueue_shapes(spec, batch())
  assert inputs == tpu_shapes.per_replica(batch(), 1)
  adapter = cpu_adapter.for_skipgram(spec, B)
  adapter.build()
  cpu = adapter.embedding.embedding_lookup(batch())
  assert activations == {n: t.shape.as_list() for n, t in cpu.items()}
  assert activations['negatives'] == [B, K, D]


def test_tpu_embedding_rejects_the_unexpanded_negatives():
  spec = skipgram_spec(dim=D, vocabulary_size=20)
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  with pytest.raises(ValueError, match='last dimension as 1'):
    embedding._get_input_shapes(batch(), per_replica=False,
                                in_tpu_context=True)


def test_the_two_tower_tables_and_ragged_ids_take_the_cpu_shapes(tmp_path):
  """Three tables, one read by two features, ragged bags: TPUEmbedding takes
  the spec, and the activations enqueue would give have the CPU's shapes."""
  rows = interaction_fixtures.write_examples(str(tmp_path / 'examples'))
  vocabularies = interaction_fixtures.write_vocabularies(
      str(tmp_path / 'vocabulary'), rows)
  module = interaction_fixtures.module()
  ctx = ModelContext(features=module.features, vocabularies=vocabularies,
                     global_batch_size=B)
  spec = spec_vocabularies.resolve(module.embedding_spec(ctx),
                                   module.features, vocabularies)
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  variables = embedding_variables.table_variables(embedding)
  assert {t: set(v) for t, v in variables.items()} == {
      t: {'parameters', *spec.optimizer.slot_names}
      for t in ('user', 'item', 'category')}
  ids = ctx.to_ids({f: tf.constant([r[f] for r in rows['train'][:B]])
                    for f in module.features})
  inputs, activations = tpu_shapes.enqueue_shapes(spec, ids)
  assert inputs == tpu_shapes.per_replica(ids, 1)
  adapter = cpu_adapter.CpuAdapter(spec, module, ctx)
  adapter.embedding.build()
  cpu = adapter.embedding.embedding_lookup(ids)
  assert activations == {n: t.shape.as_list() for n, t in cpu.items()}
  assert activations['history'] == [B, 32]
  assert activations['item_category'] == [B, 8]


class _Slice:
  """What check_single_host reads of a TPUStrategy: its hosts."""

  def __init__(self, hosts):
    self.extended = type('Extended', (), {'num_hosts': hosts})()


def test_a_tpu_on_one_host_is_accepted_and_one_on_several_refused():
  device.check_single_host(_Slice(1), "'v5e-8'")
  with pytest.raises(RuntimeError) as refused:
    device.check_single_host(_Slice(4), "'v4-32'")
  assert str(refused.value).startswith("TPU 'v4-32' spans 4 hosts; only "
                                       'single-host TPUs are supported')
  assert 'fix the tpu parameter' in str(refused.value)
