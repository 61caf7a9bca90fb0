"""Tests for tpu_embeddings/push_root/layout.py on real directories."""

import json
import os

import pytest

from tpu_embeddings.push_root import layout as push_layout


def _version(root, version, kinds=push_layout.KINDS, manifest=True,
             marker=True):
  for kind in kinds:
    d = os.path.join(root, kind, str(version))
    os.makedirs(d, exist_ok=True)
    if marker:
      open(os.path.join(d, push_layout.MARKER_FILES[kind]), 'wb').close()
    if manifest:
      with open(os.path.join(d, push_layout.MANIFEST_FILENAME), 'w') as f:
        json.dump({'version': version, 'kind': kind}, f)


def test_empty_root_has_no_versions(tmp_path):
  root = str(tmp_path / 'missing')
  assert push_layout.list_versions(root, 'serving') == []
  assert push_layout.latest_version(root, 'hub') is None


def test_lists_only_complete_versions(tmp_path):
  root = str(tmp_path)
  _version(root, 2)
  _version(root, 10)
  _version(root, 3, kinds=('hub',))            # serving never renamed in
  _version(root, 4, manifest=False)            # no manifest
  _version(root, 5, marker=False)              # no saved_model.pb
  os.makedirs(os.path.join(root, 'serving', '.tmp-11-abc'))
  os.makedirs(os.path.join(root, 'serving', 'notes'))
  os.makedirs(os.path.join(root, 'serving', '007'))
  for kind in push_layout.KINDS:
    assert push_layout.list_versions(root, kind) == [2, 10]
    assert push_layout.latest_version(root, kind) == 10
  assert push_layout.read_manifest(root, 'hub', 10) == {'version': 10,
                                                        'kind': 'hub'}
  with pytest.raises(FileNotFoundError, match='version 3 is not a complete'):
    push_layout.read_manifest(root, 'serving', 3)


def test_version_dir(tmp_path):
  root = str(tmp_path) + '/'
  assert push_layout.version_dir(root, 'serving', 7) == f'{tmp_path}/serving/7'
  assert push_layout.version_dir(root, 'hub', '12') == f'{tmp_path}/hub/12'
  assert (push_layout.version_dir('gs://bucket/push', 'hub', 3) ==
          'gs://bucket/push/hub/3')


@pytest.mark.parametrize('bad,match', [
    ('..', 'escapes the push root'),
    ('../1', 'escapes the push root'),
    ('/etc', 'escapes the push root'),
    ('1/../2', 'escapes the push root'),
    ('0', 'positive integer'),
    ('01', 'positive integer'),
    ('-1', 'positive integer'),
    ('abc', 'positive integer'),
    ('.tmp-3', 'positive integer'),
    (0, 'positive integer'),
    (True, 'positive integer'),
])
def test_bad_version_names_are_refused(tmp_path, bad, match):
  with pytest.raises(push_layout.PushLayoutError, match=match):
    push_layout.version_dir(str(tmp_path), 'serving', bad)


@pytest.mark.parametrize('bad,match', [
    ('', 'non-empty'),
    ('/', 'filesystem root'),
    ('a/../b', 'contains ".."'),
    ('gs://bucket/../other', 'contains ".."'),
])
def test_bad_roots_are_refused(bad, match):
  with pytest.raises(push_layout.PushLayoutError, match=match):
    push_layout.list_versions(bad, 'serving')


def test_bad_kind_is_refused(tmp_path):
  with pytest.raises(push_layout.PushLayoutError, match='not one of'):
    push_layout.version_dir(str(tmp_path), 'tfjs', 1)


def test_symlinks_out_of_the_root_are_refused(tmp_path):
  root = tmp_path / 'root'
  outside = tmp_path / 'outside'
  _version(str(outside), 1)
  os.makedirs(root / 'serving')
  os.symlink(outside / 'serving' / '1', root / 'serving' / '1')
  with pytest.raises(push_layout.PushLayoutError,
                     match='outside the push root'):
    push_layout.version_dir(str(root), 'serving', 1)
  os.symlink(outside / 'hub', root / 'hub')
  with pytest.raises(push_layout.PushLayoutError,
                     match='outside the push root'):
    push_layout.latest_version(str(root), 'hub')


def test_a_symlinked_version_folder_is_listed_but_never_complete(tmp_path):
  """TF Serving follows it; readers judge it (integrity.py), not the whole
  root."""
  root = tmp_path / 'root'
  _version(str(tmp_path / 'outside'), 1)
  _version(str(root), 1)
  _version(str(root), 2, kinds=('hub',))
  os.symlink(tmp_path / 'outside' / 'serving' / '1', root / 'serving' / '2')
  _version(str(root), 3, kinds=('hub',))
  os.symlink(root / 'serving' / '1', root / 'serving' / '3')
  assert push_layout.numbered(str(root), 'serving') == [1, 2, 3]
  assert push_layout.list_versions(str(root), 'serving') == [1]
  assert push_layout.latest_version(str(root), 'hub') == 1


def test_every_all_digit_name_is_numbered_as_tf_serving_reads_it(tmp_path):
  root = str(tmp_path)
  _version(root, 2)
  for name in ('0099', '0', '2' * 20, '-3', ' 4', '5a'):
    os.makedirs(os.path.join(root, 'serving', name))
  assert push_layout.numbered_folders(root, 'serving') == {
      0: ['0'], 2: ['2'], 99: ['0099']}
  assert push_layout.numbered(root, 'serving') == [0, 2, 99]
  os.makedirs(os.path.join(root, 'hub', '0099'))
  assert push_layout.list_versions(root, 'serving') == [2]
  assert not push_layout.is_complete(root, 99)
  assert not push_layout.is_complete(root, 0)
