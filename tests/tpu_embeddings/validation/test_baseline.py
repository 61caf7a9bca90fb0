"""Tests of tpu_embeddings/validation/baseline.py with real pushed exports."""

import os

import numpy as np
import pytest

from tests.support import artifact_fixtures
from tests.support import validator_fixtures
from tpu_embeddings.artifacts.checkpoint_restore import restore_for_serving
from tpu_embeddings.validation import baseline


def _newest(push_root):
  return baseline.find_baseline(push_root)[0]


def _table(found):
  return baseline.lookup_rows(found, baseline.read_tokens(found.path))


def test_no_push_root_or_nothing_pushed_means_no_baseline(tmp_path):
  assert _newest('') is None
  assert _newest(str(tmp_path / 'never-pushed')) is None
  # An incomplete version (serving only, no hub twin) is not a baseline.
  os.makedirs(tmp_path / 'partial' / 'serving' / '1')
  assert _newest(str(tmp_path / 'partial')) is None


@pytest.mark.slow
def test_latest_pushed_table_is_read_through_lookup(tmp_path):
  tokens = [f'tok{i}' for i in range(30)]
  root = str(tmp_path / 'pushed')
  tables = {}
  for version, seed in ((1, 3), (2, 4)):
    model = str(tmp_path / f'model{version}')
    tables[version] = validator_fixtures.random_table(tokens, 0.5, seed=seed)
    artifact_fixtures.write_tpu_format_model(model, tokens,
                                             table=tables[version])
    validator_fixtures.push_baseline(root, model, version)
  # A half-written higher version is ignored.
  os.makedirs(tmp_path / 'pushed' / 'serving' / '.tmp-3-x')
  b = _newest(root)
  assert b.version == 2
  assert b.path.endswith('/serving/2')
  assert baseline.read_tokens(b.path) == tokens
  assert b.manifest['source_model'].endswith('model2')
  assert len(b.source_spec().tables) == 1
  np.testing.assert_array_equal(_table(b), tables[2])
  np.testing.assert_array_equal(
      _table(b), restore_for_serving(str(tmp_path / 'model2')).table_numpy(
          'tokens'))
  # Tokens it does not know get zero rows.
  rows = baseline.lookup_rows(b, ['tok3', 'not-a-token'])
  np.testing.assert_array_equal(rows[0], tables[2][3])
  assert not rows[1].any()


def test_unreadable_baseline_is_reported_not_raised(tmp_path):
  tokens = [f'tok{i}' for i in range(10)]
  model = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(model, tokens)
  root = str(tmp_path / 'pushed')
  serving = validator_fixtures.push_baseline(root, model)
  with open(os.path.join(serving, 'saved_model.pb'), 'wb') as f:
    f.write(b'not a saved model')
  found, unreadable = baseline.find_baseline(root)
  assert found is None and [u.version for u in unreadable] == [1]
  assert unreadable[0].error.startswith('serving/1/saved_model.pb is 17 '
                                        'bytes, its manifest records ')
  os.remove(os.path.join(serving, 'assets', 'vocabulary.txt'))
  found, unreadable = baseline.find_baseline(root)
  assert found is None
  assert 'serving/1/assets/vocabulary.txt is missing' in unreadable[0].error
  assert _newest(root) is None


@pytest.fixture
def two_pushed(tmp_path):
  """Versions 1 and 2 published by the pusher from real exports."""
  tokens = [f'tok{i}' for i in range(40)]
  root = str(tmp_path / 'pushed')
  tables = {}
  for version, seed in ((1, 3), (2, 4)):
    model = str(tmp_path / f'model{version}')
    tables[version] = validator_fixtures.random_table(tokens, 0.5, seed=seed)
    artifact_fixtures.write_tpu_format_model(model, tokens,
                                             table=tables[version])
    assert validator_fixtures.publish_baseline(
        root, model, str(tmp_path / f'staging{version}')) == version
  return root, tables


def _damage(root, version, how):
  path = validator_fixtures.data_file(os.path.join(root, 'serving',
                                                   str(version)))
  if how == 'truncate':
    os.truncate(path, os.path.getsize(path) // 2)
  else:
    validator_fixtures.flip_bytes(path)


@pytest.mark.slow
@pytest.mark.parametrize('how,error', [
    ('truncate', 'serving/2/variables/variables.data-00000-of-00001 is '),
    ('flip', 'serving/2/variables/variables.data-00000-of-00001 has other '
     'bytes than its manifest records'),
])
def test_damaged_latest_version_falls_back_to_the_newest_readable(
    two_pushed, how, error):
  root, tables = two_pushed
  _damage(root, 2, how)
  found, unreadable = baseline.find_baseline(root)
  assert found.version == 1
  np.testing.assert_array_equal(_table(found), tables[1])
  assert [u.version for u in unreadable] == [2]
  assert unreadable[0].path.endswith('/serving/2')
  assert unreadable[0].error.startswith(error)


@pytest.mark.slow
def test_no_readable_version_means_no_baseline(two_pushed):
  root, _ = two_pushed
  _damage(root, 2, 'flip')
  _damage(root, 1, 'truncate')
  found, unreadable = baseline.find_baseline(root)
  assert found is None and [u.version for u in unreadable] == [2, 1]
