"""Warm start from the push root: the Kubeflow retraining path (no Resolver)."""

import json
import os
import shutil

import pytest

from tests.support import artifact_fixtures
from tests.support import validator_fixtures
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.training import warm_start

TOKENS = ['a', 'b', 'c']
MANY_TOKENS = [f't{i}' for i in range(300)]  # the data file is mostly table


def _push(root, version, source_model):
  """A complete version in the documented push layout."""
  for kind in push_layout.KINDS:
    d = root / kind / str(version)
    d.mkdir(parents=True)
    (d / push_layout.MARKER_FILES[kind]).write_bytes(b'')
    (d / push_layout.MANIFEST_FILENAME).write_text(json.dumps(
        {'version': version, 'kind': kind, 'source_model': source_model,
         'spans': [version]}))


def _two_pushed(tmp_path):
  """(model 1, model 2, push root): each pushed as the version of its number.
  """
  old, new = tmp_path / 'm1', tmp_path / 'm2'
  artifact_fixtures.write_tpu_format_model(str(old), TOKENS)
  artifact_fixtures.write_tpu_format_model(str(new), TOKENS)
  root = tmp_path / 'pushed'
  _push(root, 1, str(old))
  _push(root, 2, str(new))
  return old, new, root


def test_nothing_pushed_is_a_cold_start(tmp_path):
  assert warm_start.pushed_base(str(tmp_path), skipgram_spec(dim=8)) == ('', [])


def test_latest_pushed_source_model_is_the_base(tmp_path):
  old, new, root = _two_pushed(tmp_path)
  assert warm_start.pushed_base(str(root), skipgram_spec(dim=8)) == (
      str(new), [])


def test_a_source_relative_to_the_home_is_read_in_the_home_it_is_in(
    tmp_path):
  """Manifests name their source relative to the home (the push root's
  folder): a copied home warm-starts from its own copy of the model."""
  home = tmp_path / 'home'
  artifact_fixtures.write_tpu_format_model(str(home / 'm1'), TOKENS)
  _push(home / 'pushed', 1, 'm1')
  copy = tmp_path / 'copy'
  shutil.copytree(home, copy)
  for where in (home, copy):
    assert warm_start.pushed_base(str(where / 'pushed'),
                                  skipgram_spec(dim=8)) == (
                                      str(where / 'm1'), [])


def test_incompatible_or_vanished_source_is_a_logged_cold_start(tmp_path,
                                                                caplog):
  model = tmp_path / 'm'
  artifact_fixtures.write_tpu_format_model(str(model), TOKENS)
  root = tmp_path / 'pushed'
  _push(root, 1, str(model))
  with caplog.at_level('WARNING'):
    base, notes = warm_start.pushed_base(
        str(root), skipgram_spec(dim=8, optimizer='adam'))
  assert base == ''
  assert 'skipped' in caplog.text and 'optimizer' in caplog.text
  assert 'pushed version 1 skipped' in notes[0] and 'cold start' in notes[-1]
  _push(root, 2, str(tmp_path / 'gone'))
  with caplog.at_level('WARNING'):
    base, notes = warm_start.pushed_base(str(root), skipgram_spec(dim=8))
  # Version 2's source is gone: version 1's is the base.
  assert base == str(model)
  assert len(notes) == 1 and 'which is gone' in notes[0]
  assert 'which is gone' in caplog.text


def _damage(model, how):
  checkpoint = model_layout.latest_checkpoint(str(model))
  [data] = [p for p in os.listdir(os.path.dirname(checkpoint))
            if p.startswith(os.path.basename(checkpoint) + '.data-')]
  path = os.path.join(os.path.dirname(checkpoint), data)
  if how == 'truncate':
    os.truncate(path, os.path.getsize(path) // 2)
  else:
    validator_fixtures.flip_bytes(path, count=64)


@pytest.mark.parametrize('how', ['truncate', 'flip'])
def test_damaged_pushed_source_is_passed_over_for_the_newest_readable(
    tmp_path, how):
  old, new = tmp_path / 'm1', tmp_path / 'm2'
  artifact_fixtures.write_tpu_format_model(str(old), MANY_TOKENS)
  artifact_fixtures.write_tpu_format_model(str(new), MANY_TOKENS)
  root = tmp_path / 'pushed'
  _push(root, 1, str(old))
  _push(root, 2, str(new))
  _damage(new, how)
  spec = skipgram_spec(dim=8)
  base, notes = warm_start.pushed_base(str(root), spec)
  assert base == str(old)
  assert len(notes) == 1
  assert notes[0].startswith(f'pushed version 2 skipped: warm start from {new}'
                             ': checkpoint ')
  assert 'cannot be read' in notes[0] and '.data-00000-of-00001' in notes[0]
  _damage(old, how)
  base, notes = warm_start.pushed_base(str(root), spec)
  assert base == ''
  assert [n.split(' skipped')[0] for n in notes[:2]] == [
      'pushed version 2', 'pushed version 1']
  assert notes[2] == 'no pushed version can seed this model; cold start'


def test_a_pushed_version_whose_manifest_cannot_be_read_is_passed_over(
    tmp_path):
  old, new, root = _two_pushed(tmp_path)
  (root / 'serving' / '2' / push_layout.MANIFEST_FILENAME).write_text('{"v')
  base, notes = warm_start.pushed_base(str(root), skipgram_spec(dim=8))
  assert base == str(old) and len(notes) == 1
  assert notes[0].startswith(f'pushed version 2 skipped: {root}/serving/2/'
                             'manifest.json is not valid JSON (')
