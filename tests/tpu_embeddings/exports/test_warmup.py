"""Tests for tpu_embeddings/exports/warmup.py: TF Serving warm-up records."""

import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from tests.support import artifact_fixtures
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.exports import table_serving
from tpu_embeddings.exports import warmup

TOKENS = ['the', 'cat', 'sat', 'on', 'mat', 'é']


@pytest.fixture(scope='module')
def export_dir(tmp_path_factory):
  root = tmp_path_factory.mktemp('warmup')
  artifact_fixtures.write_tpu_format_model(str(root / 'model'), TOKENS,
                                           seed=7)
  table_serving.export_serving_model(
      checkpoint_restore.restore_for_serving(str(root / 'model')),
      str(root / 'serving'))
  return str(root / 'serving')


@pytest.mark.slow
def test_export_holds_a_predict_request_per_signature(export_dir):
  path = os.path.join(export_dir, 'assets.extra', 'tf_serving_warmup_requests')
  logs = [prediction_log_pb2.PredictionLog.FromString(record)
          for record in tf.compat.v1.io.tf_record_iterator(path)]
  assert {log.WhichOneof('log_type') for log in logs} == {'predict_log'}
  assert {log.predict_log.request.model_spec.signature_name
          for log in logs} == set(serving_contract.SIGNATURES)
  assert len(logs) <= 1000  # TF Serving reads at most 1000 records
  tokens = tf.make_ndarray(next(
      log.predict_log.request.inputs['tokens'] for log in logs
      if log.predict_log.request.model_spec.signature_name == 'lookup'))
  assert [t.decode() for t in tokens] == TOKENS[:3]


def test_every_request_runs_in_a_session_as_through_saved_model(export_dir):
  """TF Serving replays the records in the session it serves from."""
  requests = warmup.read(export_dir)
  loaded = tf.saved_model.load(export_dir)
  want = [{k: v.numpy() for k, v in loaded.signatures[name](
      **{n: tf.constant(x) for n, x in inputs.items()}).items()}
          for name, inputs in requests]
  with tf.Graph().as_default() as graph, tf.compat.v1.Session(
      graph=graph) as session:
    meta_graph = tf.compat.v1.saved_model.load(
        session, [tf.saved_model.SERVING], export_dir)
    for (name, inputs), expected in zip(requests, want):
      signature = meta_graph.signature_def[name]
      got = session.run(
          {k: v.name for k, v in signature.outputs.items()},
          {signature.inputs[k].name: v for k, v in inputs.items()})
      assert sorted(got) == sorted(expected)
      for key, value in expected.items():
        if value.dtype == object:
          assert got[key].tolist() == value.tolist(), (name, key)
        else:
          np.testing.assert_allclose(got[key], value, atol=1e-6)
      batch = len(inputs.get('tokens', inputs.get('sentences')))
      assert all(len(value) == batch for value in got.values()), name


def test_requests_round_trip_and_cover_oov(tmp_path):
  requests = warmup.requests_for(['a', 'é'])
  warmup.write(str(tmp_path), requests)
  back = warmup.read(str(tmp_path))
  assert [name for name, _ in back] == [name for name, _ in requests]
  for (_, got), (_, want) in zip(back, requests):
    assert sorted(got) == sorted(want)
    for key in want:
      assert got[key].tolist() == want[key].tolist()
  assert b'' in back[2][1]['tokens'].tolist()  # an OOV token
  assert int(back[3][1]['k']) == warmup.WARMUP_K
  with pytest.raises(ValueError, match='at least one vocabulary token'):
    warmup.requests_for([])
