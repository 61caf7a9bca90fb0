"""Tests for tpu_embeddings/exports/load_check.py and table_check.py.

The passing path (every kind in one fresh process) runs in
tests/tpu_embeddings/exports/test_export.py, where every export is
load-checked.
"""

import os

import numpy as np
import pytest

from tests.support import artifact_fixtures
from tests.support import exporter_fixtures
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import vocabulary_resources
from tpu_embeddings.exports import export as export_lib
from tpu_embeddings.exports import limits
from tpu_embeddings.exports import load_check
from tpu_embeddings.exports import table_canary
from tpu_embeddings.exports import table_check
from tpu_embeddings.exports import table_serving
from tpu_embeddings.models import module_files

TOKENS = ['x', 'y', 'z', 'w']


@pytest.fixture(scope='module')
def export(tmp_path_factory):
  root = tmp_path_factory.mktemp('load_check')
  table = np.arange(4 * 8, dtype=np.float32).reshape(4, 8) / 10.0
  artifact_fixtures.write_tpu_format_model(str(root / 'model'), TOKENS,
                                           table=table)
  restored = checkpoint_restore.restore_for_serving(str(root / 'model'))
  table_serving.export_serving_model(restored, str(root / 'serving'))
  return table, str(root / 'serving')


def test_canary_expected_values():
  table = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
  canary = table_canary.make_canary(TOKENS, lambda a, b: table[a:b])
  ids = {t: i for i, t in enumerate(TOKENS)}
  for token, got in zip(canary.tokens, canary.token_embeddings):
    want = table[ids[token]] if token in ids else np.zeros(8)
    np.testing.assert_array_equal(got, want)
  assert '' in canary.tokens and any(t not in ids for t in canary.tokens if t)
  # "first first" -> 2 v / sqrt(2); "" -> zeros.
  np.testing.assert_allclose(canary.sentence_embeddings[0],
                             2 * table[0] / np.sqrt(2), rtol=1e-6)
  np.testing.assert_array_equal(canary.sentence_embeddings[1], np.zeros(8))


def test_canary_round_trips_through_npz(tmp_path):
  table = np.ones([3, 2], np.float32)
  canary = table_canary.make_canary(['a', 'é', 'c'], lambda a, b: table[a:b])
  canary.save(str(tmp_path / 'c.npz'))
  back = table_canary.Canary.load(str(tmp_path / 'c.npz'))
  assert back.tokens == canary.tokens and back.sentences == canary.sentences
  np.testing.assert_array_equal(back.sentence_embeddings,
                                canary.sentence_embeddings)


@pytest.mark.slow
def test_fresh_process_rejects_values_that_differ(export):
  table, export_dir = export
  wrong = table_canary.make_canary(TOKENS, lambda a, b: table[a:b] + 0.5)
  with pytest.raises(load_check.LoadCheckError,
                     match=f'load check failed: serving export {export_dir}: '
                     'LoadCheckError: serving lookup: differs'):
    exporter_fixtures.run_in_fresh_process([('serving', export_dir)], wrong)


def test_fresh_process_rejects_a_serving_model_as_hub_module(export):
  table, export_dir = export
  canary = table_canary.make_canary(TOKENS, lambda a, b: table[a:b])
  with pytest.raises(load_check.LoadCheckError, match='no tfhub_module.pb'):
    exporter_fixtures.run_in_fresh_process([('hub', export_dir)], canary)
  assert os.path.exists(os.path.join(export_dir, 'saved_model.pb'))


def test_timeout_and_unknown_kind_are_clear_errors(export):
  table, export_dir = export
  canary = table_canary.make_canary(TOKENS, lambda a, b: table[a:b])
  with pytest.raises(load_check.LoadCheckError, match='timed out after'):
    exporter_fixtures.run_in_fresh_process([('serving', export_dir)], canary,
                                    timeout_seconds=0.01)
  with pytest.raises(load_check.LoadCheckError, match='unknown export kind'):
    exporter_fixtures.run_in_fresh_process([('onnx', export_dir)], canary)


@pytest.mark.slow
def test_session_path_refuses_anonymous_resources(export, tmp_path,
                                                  monkeypatch):
  """An export that answers through an eager tf.saved_model.load but not in
  a session (TF Serving's path) is refused, naming the signature and the
  reason; the load check's tf.saved_model.load, in a graph, refuses it
  too."""
  import tensorflow as tf
  table, good_dir = export
  canary = table_canary.make_canary(TOKENS, lambda a, b: table[a:b])
  load_check.check('serving', good_dir, canary)

  monkeypatch.setattr(
      vocabulary_resources.StringTokenIds, '_create_resource',
      lambda self: tf.raw_ops.AnonymousHashTable(key_dtype=tf.string,
                                                 value_dtype=tf.int64))
  model_uri = os.path.join(os.path.dirname(good_dir), 'model')
  bad_dir = str(tmp_path / 'anonymous')
  table_serving.export_serving_model(
      checkpoint_restore.restore_for_serving(model_uri), bad_dir,
      keyed_by_string=True)
  loaded = tf.saved_model.load(bad_dir)
  np.testing.assert_allclose(
      loaded.signatures['lookup'](tokens=tf.constant(TOKENS))['embeddings'],
      table, atol=1e-6)
  with pytest.raises(load_check.LoadCheckError,
                     match='serving lookup in a session: '
                     'FailedPreconditionError: Table not initialized'):
    load_check.check('serving', bad_dir, canary, graph_only=True)
  with pytest.raises(load_check.LoadCheckError,
                     match=r'serving export \(tf.saved_model.load\) lookup: '
                     'FailedPreconditionError: Table not initialized'):
    load_check.check('serving', bad_dir, canary)


def test_missing_warmup_requests_are_refused(export, tmp_path):
  import shutil
  table, good_dir = export
  canary = table_canary.make_canary(TOKENS, lambda a, b: table[a:b])
  copy = str(tmp_path / 'copy')
  shutil.copytree(good_dir, copy)
  shutil.rmtree(os.path.join(copy, 'assets.extra'))
  with pytest.raises(load_check.LoadCheckError, match='warm-up requests'):
    load_check.check('serving', copy, canary)


# Tokens that pass ExampleGen's ASCII-whitespace split but that numpy string
# arrays (trailing NUL) or Python's str.split/splitlines (Unicode whitespace,
# line separators) treat specially. Rows 0, 4 and 7 are the canary's picks.
ODD_TOKENS = ['nul\x00', '\x00lead', 'x\x1cy', 'p\x85q', 'n\xa0b',
              '\ufeffbom', 'id\u3000eo', 'ls\u2028ps\u2029']


def test_canary_keeps_odd_tokens_through_npz(tmp_path):
  table = np.ones([len(ODD_TOKENS), 2], np.float32)
  canary = table_canary.make_canary(ODD_TOKENS, lambda a, b: table[a:b])
  canary.save(str(tmp_path / 'c.npz'))
  back = table_canary.Canary.load(str(tmp_path / 'c.npz'))
  assert back.tokens == canary.tokens and back.sentences == canary.sentences
  assert ODD_TOKENS[0] in back.tokens


def test_canary_sentences_split_only_on_ascii_whitespace():
  table = np.arange(len(ODD_TOKENS) * 2, dtype=np.float32).reshape(-1, 2) + 1
  canary = table_canary.make_canary(ODD_TOKENS, lambda a, b: table[a:b])
  # "first first": the token twice, as the export's tokenizer sees it.
  np.testing.assert_allclose(canary.sentence_embeddings[0],
                             2 * table[0] / np.sqrt(2), rtol=1e-6)
  # " first\tmiddle last ": three tokens, NBSP and U+2028 inside tokens.
  np.testing.assert_allclose(canary.sentence_embeddings[3],
                             (table[0] + table[4] + table[7]) / np.sqrt(3),
                             rtol=1e-6)


@pytest.mark.slow
def test_exports_of_odd_tokens_pass_the_load_check_and_match_the_rows(
    tmp_path):
  import tensorflow as tf
  import tensorflow_hub as hub

  table = (np.arange(len(ODD_TOKENS) * 8, dtype=np.float32).reshape(-1, 8)
           / 64.0 + 0.1)
  artifact_fixtures.write_tpu_format_model(str(tmp_path / 'model'),
                                           ODD_TOKENS, table=table)
  # Load-checks every export in a fresh process, as a pipeline run does.
  dirs = export_lib.export_model(
      str(tmp_path / 'model'),
      {kind: str(tmp_path / kind) for kind in export_kinds.NAMES},
      module_files.builtin())
  served = tf.saved_model.load(dirs['serving']).signatures['lookup'](
      tokens=tf.constant(ODD_TOKENS))['embeddings'].numpy()
  np.testing.assert_allclose(served, table, atol=1e-6)
  hub_rows = hub.load(dirs['hub']).signatures['tokens'](
      tokens=tf.constant(ODD_TOKENS))['default'].numpy()
  np.testing.assert_allclose(hub_rows, table, atol=1e-6)


@pytest.mark.slow
def test_a_large_serving_export_is_loaded_one_way_after_the_other(
    export, tmp_path, monkeypatch):
  """Above OVERLAP_MAX_BYTES the session's load ends (and its table is
  freed) before `tf.saved_model.load` starts; a bad export is still
  refused."""
  import shutil
  table, good_dir = export
  canary = table_canary.make_canary(TOKENS, lambda a, b: table[a:b])
  monkeypatch.setattr(limits, 'OVERLAP_MAX_BYTES', 0)
  events = []
  for name in ('_check_serving_in_a_session', '_check_serving_saved_model'):
    original = getattr(table_check, name)

    def traced(*args, name=name, original=original):
      events.append(('start', name))
      try:
        return original(*args)
      finally:
        events.append(('end', name))

    monkeypatch.setattr(table_check, name, traced)
  load_check.check('serving', good_dir, canary)
  assert events == [('start', '_check_serving_in_a_session'),
                    ('end', '_check_serving_in_a_session'),
                    ('start', '_check_serving_saved_model'),
                    ('end', '_check_serving_saved_model')]
  copy = str(tmp_path / 'copy')
  shutil.copytree(good_dir, copy)
  with open(os.path.join(copy, 'assets',
                         serving_contract.TOKENS_ASSET_FILENAME), 'w') as f:
    f.write('w\nz\ny\nx\n')  # rows answer for other tokens
  with pytest.raises(load_check.LoadCheckError, match='differs'):
    load_check.check('serving', copy, canary)
