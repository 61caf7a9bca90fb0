"""Tests of components/validator/baseline.py with real pushed exports."""

import os

import numpy as np
import pytest

from components.checkpoint_restore import restore_for_serving
from components.validator import baseline
from tests import artifact_fixtures
from tests import validator_fixtures


def test_no_push_root_or_nothing_pushed_means_no_baseline(tmp_path):
  assert baseline.load_baseline('') is None
  assert baseline.load_baseline(str(tmp_path / 'never-pushed')) is None
  # An incomplete version (serving only, no hub twin) is not a baseline.
  os.makedirs(tmp_path / 'partial' / 'serving' / '1')
  assert baseline.load_baseline(str(tmp_path / 'partial')) is None


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
  b = baseline.load_baseline(root)
  assert b.version == 2
  assert b.path.endswith('/serving/2')
  assert b.tokens == tokens
  assert b.manifest['source_model'].endswith('model2')
  np.testing.assert_array_equal(b.table, tables[2])
  np.testing.assert_array_equal(
      b.table, restore_for_serving(str(tmp_path / 'model2')).table_numpy(
          'tokens'))


def test_unreadable_baseline_is_a_clear_error(tmp_path):
  tokens = [f'tok{i}' for i in range(10)]
  model = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(model, tokens)
  root = str(tmp_path / 'pushed')
  serving = validator_fixtures.push_baseline(root, model)
  with open(os.path.join(serving, 'saved_model.pb'), 'wb') as f:
    f.write(b'not a saved model')
  with pytest.raises(baseline.BaselineError, match='serving/1 cannot be loaded'):
    baseline.load_baseline(root)
  os.remove(os.path.join(serving, 'assets', 'vocabulary.txt'))
  with pytest.raises(baseline.BaselineError, match='no assets/vocabulary.txt'):
    baseline.load_baseline(root)
