"""Tests for tpu_embeddings/exports/export.py: one real export of the
built-in skip-gram (a module declaring `exported_table`), checked end to end.

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

from tests.support import artifact_fixtures
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.exports import export
from tpu_embeddings.exports import fresh_process
from tpu_embeddings.exports import limits
from tpu_embeddings.exports import load_check
from tpu_embeddings.exports import module_canary
from tpu_embeddings.exports import table_check
from tpu_embeddings.exports import table_hub
from tpu_embeddings.models import exported_table
from tpu_embeddings.models import module_files
from tpu_embeddings.models.model_module import ModelModuleError
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


def _outputs(root):
  return {kind: str(root / kind) for kind in export_kinds.NAMES}


def _export(model_uri, outputs, **options):
  return export.export_model(model_uri, outputs, module_files.builtin(),
                             export.ExportOptions(**options))


@pytest.fixture(scope='module')
def run(tmp_path_factory):
  root = tmp_path_factory.mktemp('exporter')
  model_uri = str(root / 'trainer' / 'model' / '7')
  artifact_fixtures.write_tpu_format_model(
      model_uri, TOKENS, spec=skipgram_spec(dim=DIM, optimizer='adagrad'),
      seed=11)
  outputs = _outputs(root / 'exporter')
  for uri in outputs.values():
    os.makedirs(uri)  # TFX creates output directories before an executor
  dirs = _export(model_uri, outputs, num_oov_buckets=1,
                 l2_regularization=1e-4)
  reader = tf.train.load_checkpoint(model_layout.latest_checkpoint(model_uri))
  table = reader.get_tensor(model_layout.table_key('tokens'))
  return root, model_uri, outputs, dirs, table


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
  _, model_uri, _, dirs, _ = run
  keys = dict(tf.train.list_variables(
      model_layout.latest_checkpoint(model_uri)))
  assert model_layout.slot_key('tokens', 'accumulators') in keys
  for kind in export_kinds.NAMES:
    names = [k for k, _ in tf.train.list_variables(
        os.path.join(dirs[kind], 'variables', 'variables'))]
    assert names and not [n for n in names if 'accumulator' in n]


def test_each_kind_lands_in_its_output_and_no_staging_is_left(run):
  root, _, outputs, dirs, _ = run
  for kind in export_kinds.KINDS:
    assert dirs[kind.name] == kind.artifact_path(outputs[kind.name])
    assert os.path.exists(os.path.join(dirs[kind.name], kind.marker))
  # TFX's layout: path_utils.serving_model_path(uri) is the SavedModel.
  assert os.listdir(outputs['serving']) == ['Format-Serving']
  assert sorted(os.listdir(root / 'exporter')) == sorted(export_kinds.NAMES)


def test_outputs_must_name_every_kind(run, tmp_path):
  _, model_uri, _, _, _ = run
  with pytest.raises(ValueError, match='one output URI per export kind'):
    _export(model_uri, {'serving': str(tmp_path / 'serving')})
  assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_all_formats_agree_with_checkpoint_rows(run):
  _, _, _, dirs, table = run
  want_sentences, want_tokens = _expected(table)
  proc = subprocess.run(
      [sys.executable, '-c', _FRESH_PROCESS_SCRIPT, dirs['serving'],
       dirs['hub'], json.dumps(SENTENCES), json.dumps(QUERY_TOKENS)],
      capture_output=True, text=True, check=True)
  fresh = json.loads(proc.stdout.strip().splitlines()[-1])
  np.testing.assert_allclose(fresh['lookup'], want_tokens, atol=1e-6)
  for key in ('serving_default', 'hub_load_default', 'hub_keras_layer'):
    np.testing.assert_allclose(fresh[key], want_sentences, atol=1e-6,
                               err_msg=key)
  # hub.Module in a TF1 graph.
  with tf.Graph().as_default():
    m = hub.Module(dirs['hub'])
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
@pytest.mark.parametrize('large', [False, True])
def test_a_table_is_checked_here_after_both_exports(run, tmp_path,
                                                    monkeypatch, large):
  """No second interpreter: once both kinds are written, this process
  checks each in graphs of its own, one after the other; with every loader
  of its kind, or, above OVERLAP_MAX_BYTES (the table released first), with
  the loaders of TF Serving and TF1 Hub consumers only."""
  _, model_uri, _, _, table = run
  if large:
    monkeypatch.setattr(limits, 'OVERLAP_MAX_BYTES', 0)
  started, checked, hub_stage = [], [], []

  class Counted(fresh_process.FreshProcess):

    def __init__(self, *args, **kwargs):
      started.append(self)
      super().__init__(*args, **kwargs)

  original_check = load_check.check

  def check(kind, export_dir, canary, graph_only=False):
    checked.append((kind, graph_only, os.path.exists(os.path.join(
        hub_stage[0], 'tfhub_module.pb'))))
    return original_check(kind, export_dir, canary, graph_only=graph_only)

  original = table_hub.export_hub_module

  def export_hub_module(rows, tokens_path, export_dir, **kwargs):
    hub_stage.append(export_dir)
    return original(rows, tokens_path, export_dir, **kwargs)

  monkeypatch.setattr(fresh_process, 'FreshProcess', Counted)
  monkeypatch.setattr(load_check, 'check', check)
  monkeypatch.setattr(table_hub, 'export_hub_module', export_hub_module)
  dirs = _export(model_uri, _outputs(tmp_path))
  assert started == []
  # (kind, graph loaders only, Hub module written) at each check.
  assert checked == [('serving', large, True), ('hub', large, True)]
  served = tf.saved_model.load(dirs['serving'])
  np.testing.assert_allclose(served.signatures['lookup'](
      tokens=tf.constant(TOKENS))['embeddings'], table, atol=1e-6)
  assert os.path.exists(os.path.join(dirs['hub'], 'tfhub_module.pb'))


@pytest.mark.slow
@pytest.mark.parametrize('large', [False, True])
def test_a_damaged_export_publishes_nothing(run, tmp_path, monkeypatch,
                                            large):
  """The checks in this process refuse an export whose rows are not the
  checkpoint's, and no output receives anything."""
  _, model_uri, _, _, _ = run
  if large:
    monkeypatch.setattr(limits, 'OVERLAP_MAX_BYTES', 0)
  original = table_hub.export_hub_module

  def export_hub_module(rows, tokens_path, export_dir, **kwargs):
    original(rows, tokens_path, export_dir, **kwargs)
    assets = os.path.join(export_dir, 'assets')
    for name in os.listdir(assets):  # rows answer for other tokens
      with open(os.path.join(assets, name)) as f:
        lines = f.read().splitlines()
      with open(os.path.join(assets, name), 'w') as f:
        f.write('\n'.join(reversed(lines)) + '\n')

  monkeypatch.setattr(table_hub, 'export_hub_module', export_hub_module)
  with pytest.raises(load_check.LoadCheckError,
                     match=r'load check failed: hub export .*differs'):
    _export(model_uri, _outputs(tmp_path))
  assert os.listdir(tmp_path) == []


def test_missing_checkpoint_is_a_clear_error(tmp_path):
  model_uri = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(model_uri, TOKENS)
  for name in os.listdir(model_layout.checkpoint_dir(model_uri)):
    os.remove(os.path.join(model_layout.checkpoint_dir(model_uri), name))
  outputs = _outputs(tmp_path / 'out')
  os.makedirs(outputs['serving'])
  with pytest.raises(FileNotFoundError, match='no checkpoint in'):
    _export(model_uri, outputs)
  assert os.listdir(tmp_path / 'out') == ['serving']
  assert os.listdir(outputs['serving']) == []


def test_a_bad_exported_table_declaration_names_the_module(tmp_path):
  model_uri = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(model_uri, TOKENS)

  class Declares:
    path = 'my_model.py'

    def hook(self, name):
      assert name == exported_table.NAME
      return lambda spec: ('no_such_table', '')

  with pytest.raises(ModelModuleError,
                     match='my_model.py: exported_table: returned'):
    export.source_of(model_uri, Declares(), str(tmp_path),
                     export.ExportOptions())


def test_every_registered_kind_has_a_writer_and_a_check(run, tmp_path):
  _, model_uri, _, _, _ = run
  source = export.source_of(model_uri, module_files.builtin(), str(tmp_path),
                            export.ExportOptions())
  assert isinstance(source, export.TableSource)
  assert list(source.writers) == list(export_kinds.NAMES)
  for checks in (table_check.CHECKS, module_canary.CHECKS):
    assert set(checks) == set(export_kinds.NAMES)
  assert set(load_check.FORMATS) == {source.canary.FORMAT,
                                     module_canary.ModelCanary.FORMAT}
