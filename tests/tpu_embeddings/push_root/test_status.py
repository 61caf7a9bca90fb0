"""tpu_embeddings/push_root/status.py and the load check of integrity.py, on
versions published from real exports."""

import json
import os

import pytest

from tests.support import pusher_exports
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import publish
from tpu_embeddings.push_root import status
from tpu_embeddings.push_root import versions


@pytest.fixture(scope='module')
def sources(tmp_path_factory):
  base = tmp_path_factory.mktemp('sources')
  return {'serving': pusher_exports.write_serving_model(str(base / 's'), 1.0),
          'hub': pusher_exports.write_hub_module(str(base / 'h'), 1.0)}


@pytest.fixture
def root(tmp_path, sources):
  root = str(tmp_path / 'pushed')
  for _ in range(3):
    publish.publish(root, sources, {'spans': [1]})
  return root


def _states(root):
  return {v.version: (v.state, v.served) for v in status.scan(root)}


def test_intact_versions_and_the_served_one(root):
  assert _states(root) == {1: ('intact', False), 2: ('intact', False),
                           3: ('intact', True)}
  assert status.served_version(root) == 3
  assert status.scan(str(os.path.dirname(root)) + '/missing') == []


def test_the_load_check_reads_small_files_but_not_table_data(root):
  directory = push_layout.version_dir(root, 'serving', 3)
  for rel in ('saved_model.pb', 'variables/variables.index',
              'variables/variables.data-00000-of-00001'):
    path = os.path.join(directory, rel)
    with open(path, 'r+b') as f:
      first = f.read(1)
      f.seek(0)
      f.write(bytes([first[0] ^ 0xFF]))
  problems = integrity.version_problems(root, 3)
  assert problems == [
      'serving/3/saved_model.pb has other bytes than its manifest records '
      '(sha256 differs)',
      'serving/3/variables/variables.index has other bytes than its manifest '
      'records (sha256 differs)']
  assert len(integrity.version_problems(root, 3, verify=True)) == 3
  assert _states(root)[3] == ('damaged', True)


def test_a_serving_folder_missing_its_marker_is_served_and_damaged(root):
  os.remove(os.path.join(push_layout.version_dir(root, 'serving', 3),
                         'saved_model.pb'))
  assert push_layout.list_versions(root, 'serving') == [1, 2]
  assert _states(root)[3] == ('damaged', True)
  assert integrity.newest_intact(root) == 2


def test_twin_manifests_must_agree(root):
  path = os.path.join(push_layout.version_dir(root, 'hub', 2),
                      push_layout.MANIFEST_FILENAME)
  with open(path) as f:
    manifest = json.load(f)
  manifest['spans'] = [7]
  manifest['version'] = 3
  with open(path, 'w') as f:
    json.dump(manifest, f)
  assert integrity.version_problems(root, 2) == [
      'hub/2/manifest.json records version 3',
      'serving/2 and hub/2 manifests disagree on spans ([1] and [7])']


def test_hub_leftovers_and_pushes_in_progress(root):
  os.rename(push_layout.version_dir(root, 'serving', 3),
            os.path.join(root, 'serving', '.old-3'))
  assert _states(root)[3] == ('leftover', False)
  assert status.served_version(root) == 2
  with versions.reserve_version(root) as number:
    serving = push_layout.version_dir(root, 'serving', number)
    os.makedirs(serving)
    open(os.path.join(serving, 'variables.index'), 'w').close()
    assert _states(root)[number] == ('pushing', False)
    assert status.served_version(root) == 2
  assert _states(root)[number] == ('damaged', True)
