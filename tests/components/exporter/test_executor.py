"""Tests for components/exporter/executor.py: one real export, checked end to
end.

The trainer-side checkpoint is written by `TPUEmbedding` in CPU mode (TPU
checkpoint format, with Adagrad accumulator slots).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
from tfx.types import standard_artifacts
from tfx.utils import path_utils

from components import keys
from components.exporter import executor
from components.exporter import fresh_process
from components.exporter import load_check
from tests.support import artifact_fixtures
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.models.skipgram_features import skipgram_spec

TOKENS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta']
DIM = 6
SENTENCES = ['beta beta', '', 'alpha nope', ' gamma\tdelta zeta ', 'nope']
QUERY_TOKENS = ['zeta', 'nope', '', 'alpha']

# Runs in a new interpreter: TF2 loads of both exports, outputs as JSON.
_FRESH_PROCESS_SCRIPT = textwrap.dedent('''
    import json, sys
    import tensorflow as tf
    import tensorflow_hub as hub
    serving_dir, hub_dir, sentences, tokens = (
        sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), \
json.loads(sys.argv[4]))
    served = tf.saved_model.load(serving_dir)
    module = hub.load(hub_dir)
    out = {
        'serving_default': served.signatures['serving_default'](
            sentences=tf.constant(sentences))['embeddings'].numpy().tolist(),
        'lookup': served.signatures['lookup'](
            tokens=tf.constant(tokens))['embeddings'].numpy().tolist(),
        'hub_load_default': module.signatures['default'](
            sentences=tf.constant(sentences))['default'].numpy().tolist(),
        'hub_keras_layer': hub.KerasLayer(hub_dir)(
            tf.constant(sentences)).numpy().tolist(),
    }
    print(json.dumps(out))
''')


def _model_artifact(uri):
  a = standard_artifacts.Model()
  a.uri = uri
  return a


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  root = tmp_path_factory.mktemp('exporter')
  model_uri = str(root / 'trainer' / 'model' / '7')
  artifact_fixtures.write_tpu_format_model(
      model_uri, TOKENS, spec=skipgram_spec(dim=DIM, optimizer='adagrad'),
      seed=11)
  serving = _model_artifact(str(root / 'exporter' / 'serving_model' / '9'))
  hub_module = _model_artifact(str(root / 'exporter' / 'hub_module' / '9'))
  # TFX creates output directories before the executor runs.
  os.makedirs(serving.uri)
  os.makedirs(hub_module.uri)
  executor.Executor().Do(
      {keys.MODEL: [_model_artifact(model_uri)]},
      {keys.SERVING_MODEL: [serving],
       keys.HUB_MODULE: [hub_module]},
      {'config': json.dumps({'num_oov_buckets': 1,
                             'l2_regularization': 1e-4})})
  reader = tf.train.load_checkpoint(model_layout.latest_checkpoint(model_uri))
  table = reader.get_tensor(model_layout.table_key('tokens'))
  return root, model_uri, serving, hub_module, table


def _expected(table):
  v = {t: table[i] for i, t in enumerate(TOKENS)}
  zero = np.zeros(DIM, np.float32)

  def sqrtn(s):
    parts = s.split()
    return (sum(v.get(t, zero) for t in parts) / np.sqrt(len(parts))
            if parts else zero)

  return (np.stack([sqrtn(s) for s in SENTENCES]),
          np.stack([v.get(t, zero) for t in QUERY_TOKENS]))


@pytest.mark.slow
def test_checkpoint_has_slots_that_exports_do_not(run):
  _, model_uri, serving, hub_module, _ = run
  keys = dict(tf.train.list_variables(
      model_layout.latest_checkpoint(model_uri)))
  assert model_layout.slot_key('tokens', 'accumulators') in keys
  for uri in (serving_contract.serving_model_path(serving.uri),
              hub_module.uri):
    names = [k for k, _ in tf.train.list_variables(
        os.path.join(uri, 'variables', 'variables'))]
    assert names and not [n for n in names if 'accumulator' in n]


def test_outputs_carry_source_model_and_no_staging_is_left(run):
  root, model_uri, serving, hub_module, _ = run
  for artifact in (serving, hub_module):
    assert artifact.get_string_custom_property(
        keys.SOURCE_MODEL) == model_uri
    assert artifact.get_int_custom_property(keys.EXPORTED) == 1
  # TFX's layout: path_utils.serving_model_path(uri) is the SavedModel.
  assert os.listdir(serving.uri) == ['Format-Serving']
  assert os.path.exists(os.path.join(
      path_utils.serving_model_path(serving.uri), 'saved_model.pb'))
  assert os.path.exists(os.path.join(hub_module.uri, 'tfhub_module.pb'))
  for kind in ('serving_model', 'hub_module'):
    assert os.listdir(root / 'exporter' / kind) == ['9']


@pytest.mark.slow
def test_all_formats_agree_with_checkpoint_rows(run):
  _, _, serving, hub_module, table = run
  want_sentences, want_tokens = _expected(table)
  proc = subprocess.run(
      [sys.executable, '-c', _FRESH_PROCESS_SCRIPT,
       serving_contract.serving_model_path(serving.uri),
       hub_module.uri, json.dumps(SENTENCES), json.dumps(QUERY_TOKENS)],
      capture_output=True, text=True, check=True)
  fresh = json.loads(proc.stdout.strip().splitlines()[-1])
  np.testing.assert_allclose(fresh['lookup'], want_tokens, atol=1e-6)
  for key in ('serving_default', 'hub_load_default', 'hub_keras_layer'):
    np.testing.assert_allclose(fresh[key], want_sentences, atol=1e-6,
                               err_msg=key)
  # hub.Module in a TF1 graph.
  with tf.Graph().as_default():
    m = hub.Module(hub_module.uri)
    sentences = m(tf.constant(SENTENCES))
    tokens = m(dict(tokens=tf.constant(QUERY_TOKENS)), signature='tokens')
    with tf.compat.v1.Session() as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.tables_initializer()])
      got_sentences, got_tokens = session.run([sentences, tokens])
  np.testing.assert_allclose(got_sentences, want_sentences, atol=1e-6)
  np.testing.assert_allclose(got_tokens, want_tokens, atol=1e-6)
  # Spot-check the special cases against the rows themselves.
  np.testing.assert_allclose(got_sentences[0], 2 * table[1] / np.sqrt(2),
                             atol=1e-6)
  np.testing.assert_array_equal(got_sentences[1], 0)
  np.testing.assert_array_equal(got_tokens[1], 0)


@pytest.mark.slow
def test_hub_check_in_its_own_process(run, tmp_path, monkeypatch):
  """What large tables get: the two checks in two fresh processes."""
  _, model_uri, _, _, _ = run
  started = []

  class Counted(fresh_process.FreshProcess):

    def __init__(self, *args, **kwargs):
      started.append(self)
      super().__init__(*args, **kwargs)

  monkeypatch.setattr(fresh_process, 'FreshProcess', Counted)
  serving_uri, hub_uri = str(tmp_path / 'serving'), str(tmp_path / 'hub')
  executor.export_model(model_uri, serving_uri, hub_uri,
                        separate_hub_check=True)
  assert len(started) == 2
  assert os.path.exists(os.path.join(
      serving_contract.serving_model_path(serving_uri), 'saved_model.pb'))
  assert os.path.exists(os.path.join(hub_uri, 'tfhub_module.pb'))


@pytest.mark.slow
def test_a_large_table_is_checked_after_both_exports(run, tmp_path,
                                                     monkeypatch):
  """Above OVERLAP_MAX_BYTES the pod holds one copy of the table at a time:
  the checks start once the Hub module is written, the Hub module's in a
  process of its own started after the serving check's ended."""
  _, model_uri, _, _, table = run
  monkeypatch.setattr(load_check, 'OVERLAP_MAX_BYTES', 0)
  submitted, started = [], []
  hub_stage = []

  class Watched(fresh_process.FreshProcess):

    def __init__(self, *args, **kwargs):
      started.append(self)
      super().__init__(*args, **kwargs)

    def submit(self, kind, export_dir, canary):
      alive = [p for p in started if p._proc.poll() is None]
      submitted.append((kind, len(alive), os.path.exists(os.path.join(
          hub_stage[0], 'tfhub_module.pb'))))
      super().submit(kind, export_dir, canary)

  original = executor.hub_export.export_hub_module

  def export_hub_module(rows, tokens_path, export_dir, **kwargs):
    hub_stage.append(export_dir)
    return original(rows, tokens_path, export_dir, **kwargs)

  monkeypatch.setattr(fresh_process, 'FreshProcess', Watched)
  monkeypatch.setattr(executor.hub_export, 'export_hub_module',
                      export_hub_module)
  serving_uri, hub_uri = str(tmp_path / 'serving'), str(tmp_path / 'hub')
  executor.export_model(model_uri, serving_uri, hub_uri)
  # (kind, check processes alive, Hub module written) at each submission.
  assert submitted == [('serving', 1, True), ('hub', 1, True)]
  assert len(started) == 2
  served = tf.saved_model.load(serving_contract.serving_model_path(
      serving_uri))
  np.testing.assert_allclose(served.signatures['lookup'](
      tokens=tf.constant(TOKENS))['embeddings'], table, atol=1e-6)
  assert os.path.exists(os.path.join(hub_uri, 'tfhub_module.pb'))


@pytest.mark.slow
def test_failed_load_check_publishes_nothing(run, tmp_path):
  _, model_uri, _, _, _ = run
  serving_uri, hub_uri = str(tmp_path / 'serving'), str(tmp_path / 'hub')
  for separate_hub_check in (False, True):
    with pytest.raises(load_check.LoadCheckError, match='timed out'):
      executor.export_model(model_uri, serving_uri, hub_uri,
                            load_check_timeout_seconds=0.01,
                            separate_hub_check=separate_hub_check)
    assert os.listdir(tmp_path) == []


def test_missing_checkpoint_is_a_clear_error(tmp_path):
  model_uri = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(model_uri, TOKENS)
  for name in os.listdir(model_layout.checkpoint_dir(model_uri)):
    os.remove(os.path.join(model_layout.checkpoint_dir(model_uri), name))
  os.makedirs(tmp_path / 'out' / 'serving')
  with pytest.raises(FileNotFoundError, match='no checkpoint in'):
    executor.export_model(model_uri, str(tmp_path / 'out' / 'serving'),
                          str(tmp_path / 'out' / 'hub'))
  assert os.listdir(tmp_path / 'out') == ['serving']
  assert os.listdir(tmp_path / 'out' / 'serving') == []


def test_an_unblessed_model_is_not_exported(tmp_path):
  """Its table may be NaN: no export could pass the load check."""
  model_uri = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(
      model_uri, TOKENS, table=np.full([len(TOKENS), 8], np.nan, np.float32))
  blessing = standard_artifacts.ModelBlessing()
  blessing.uri = str(tmp_path / 'blessing')
  blessing.set_int_custom_property('blessed', 0)
  serving = _model_artifact(str(tmp_path / 'serving'))
  hub_module = _model_artifact(str(tmp_path / 'hub'))
  os.makedirs(serving.uri)
  os.makedirs(hub_module.uri)
  executor.Executor().Do(
      {keys.MODEL: [_model_artifact(model_uri)],
       keys.MODEL_BLESSING: [blessing]},
      {keys.SERVING_MODEL: [serving],
       keys.HUB_MODULE: [hub_module]},
      {'config': json.dumps({})})
  for artifact in (serving, hub_module):
    assert os.listdir(artifact.uri) == []
    assert artifact.get_int_custom_property(keys.EXPORTED) == 0
    assert artifact.get_string_custom_property(
        keys.SOURCE_MODEL) == model_uri
