"""Warm start from the push root: the Kubeflow retraining path (no Resolver)."""

import json

from components import push_layout
from components.embedding_spec import skipgram_spec
from components.trainer import warm_start
from tests import artifact_fixtures

TOKENS = ['a', 'b', 'c']


def _push(root, version, source_model):
  """A complete version in the documented push layout."""
  for kind in push_layout.KINDS:
    d = root / kind / str(version)
    d.mkdir(parents=True)
    (d / push_layout.MARKER_FILES[kind]).write_bytes(b'')
    (d / push_layout.MANIFEST_FILENAME).write_text(json.dumps(
        {'version': version, 'kind': kind, 'source_model': source_model,
         'spans': [version]}))


def test_nothing_pushed_is_a_cold_start(tmp_path):
  assert warm_start.pushed_base(str(tmp_path), skipgram_spec(dim=8)) == ''


def test_latest_pushed_source_model_is_the_base(tmp_path):
  old, new = tmp_path / 'm1', tmp_path / 'm2'
  artifact_fixtures.write_tpu_format_model(str(old), TOKENS)
  artifact_fixtures.write_tpu_format_model(str(new), TOKENS)
  root = tmp_path / 'pushed'
  _push(root, 1, str(old))
  _push(root, 2, str(new))
  assert warm_start.pushed_base(str(root), skipgram_spec(dim=8)) == str(new)


def test_incompatible_or_vanished_source_is_a_logged_cold_start(tmp_path, caplog):
  model = tmp_path / 'm'
  artifact_fixtures.write_tpu_format_model(str(model), TOKENS)
  root = tmp_path / 'pushed'
  _push(root, 1, str(model))
  with caplog.at_level('WARNING'):
    assert warm_start.pushed_base(
        str(root), skipgram_spec(dim=8, optimizer='adam')) == ''
  assert 'skipped' in caplog.text and 'optimizer' in caplog.text
  _push(root, 2, str(tmp_path / 'gone'))
  with caplog.at_level('WARNING'):
    assert warm_start.pushed_base(str(root), skipgram_spec(dim=8)) == ''
  assert 'which is gone' in caplog.text
