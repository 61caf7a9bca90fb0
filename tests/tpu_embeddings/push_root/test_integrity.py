"""tpu_embeddings/push_root/integrity.py on versions published from real
exports."""

import json
import os

import pytest

from tests.support import pusher_exports
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import publish


@pytest.fixture
def root(tmp_path):
  root = str(tmp_path / 'pushed')
  for scale in (1.0, 2.0):
    base = tmp_path / f'src{scale}'
    publish.publish(root, {
        'serving': pusher_exports.write_serving_model(str(base / 's'), scale),
        'hub': pusher_exports.write_hub_module(str(base / 'h'), scale)})
  return root


def _data_file(root, kind, version):
  variables = os.path.join(push_layout.version_dir(root, kind, version),
                           'variables')
  return os.path.join(variables, next(
      n for n in os.listdir(variables) if n.startswith('variables.data-')))


def test_manifest_records_every_file_size(root):
  m = push_layout.read_manifest(root, 'serving', 1)
  assert set(m['sizes']) == set(m['files'])
  directory = push_layout.version_dir(root, 'serving', 1)
  for rel, size in m['sizes'].items():
    assert os.path.getsize(os.path.join(directory, rel)) == size
  assert integrity.version_problems(root, 1) == []
  assert integrity.version_problems(root, 1, verify=True) == []


def test_size_check_finds_truncated_grown_and_missing_files(root):
  data = _data_file(root, 'hub', 2)
  size = os.path.getsize(data)
  os.truncate(data, size - 1)
  rel = os.path.relpath(data, push_layout.version_dir(root, 'hub', 2))
  assert integrity.version_problems(root, 2) == [
      f'hub/2/{rel} is {size - 1} bytes, its manifest records {size}']
  os.truncate(data, size + 5)
  assert 'is %d bytes' % (size + 5) in integrity.version_problems(
      root, 2)[0]
  os.remove(data)
  assert integrity.version_problems(root, 2) == [
      f'hub/2/{rel} is missing']
  assert integrity.newest_intact(root) == 1
  assert 'rollback --push-root' in integrity.way_out(root, 2)


def test_only_the_checksum_check_reads_flipped_bytes(root):
  data = _data_file(root, 'serving', 2)
  with open(data, 'r+b') as f:
    f.seek(os.path.getsize(data) // 2)
    byte = f.read(1)
    f.seek(-1, os.SEEK_CUR)
    f.write(bytes([byte[0] ^ 0xFF]))
  assert integrity.version_problems(root, 2) == []
  problems = integrity.version_problems(root, 2, verify=True)
  assert len(problems) == 1 and 'sha256 differs' in problems[0]


def test_manifests_without_sizes_are_checked_for_missing_files(root):
  directory = push_layout.version_dir(root, 'serving', 1)
  path = os.path.join(directory, push_layout.MANIFEST_FILENAME)
  with open(path) as f:
    manifest = json.load(f)
  del manifest['sizes']
  with open(path, 'w') as f:
    json.dump(manifest, f)
  os.truncate(_data_file(root, 'serving', 1), 1)
  assert integrity.version_problems(root, 1) == []
  os.remove(_data_file(root, 'serving', 1))
  assert integrity.version_problems(root, 1)[0].endswith('is missing')
  assert integrity.newest_intact(root) == 2
  assert integrity.way_out(root, 2).startswith(
      'no other pushed version is intact')
