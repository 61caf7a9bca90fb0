"""Tests for tpu_embeddings/push_root/publish.py: versions, manifests,
retention, rollback, refusals.

Atomicity under kills and races between pushes are in
test_publish_atomicity.py.
"""

import json
import os
import shutil

import pytest

from tests.support import publish_fixtures
from tests.support import pusher_exports
from tests.support.publish_fixtures import numbered_dirs as _numbered_dirs
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import manifest as manifest_lib
from tpu_embeddings.push_root import publish
from tpu_embeddings.push_root import served


@pytest.fixture(scope='module')
def exports(tmp_path_factory):
  return publish_fixtures.write_exports(tmp_path_factory.mktemp('exports'))


def test_publish_copies_both_kinds_under_one_version(tmp_path, exports):
  root = str(tmp_path / 'push')
  fields = {'source_model': '/models/7', 'spans': [4, 3],
            'metrics': {'recall': 0.5}, 'pipeline_run_id': 'run-1'}
  first = publish.publish(root, exports[2.0], fields)
  second = publish.publish(root, exports[3.0], fields)
  assert (first.version, second.version) == (1, 2)
  for kind in push_layout.KINDS:
    assert push_layout.list_versions(root, kind) == [1, 2]
    m = push_layout.read_manifest(root, kind, 2)
    assert m['version'] == 2 and m['kind'] == kind
    assert m['source_model'] == '/models/7' and m['spans'] == [3, 4]
    assert m['metrics'] == {'recall': 0.5} and m['pipeline_run_id'] == 'run-1'
    assert m['pushed_at'].endswith('Z')
    # Checksums cover every file copied, and match the copies.
    src_files = sorted(
        os.path.relpath(os.path.join(d, f), exports[3.0][kind])
        for d, _, fs in os.walk(exports[3.0][kind]) for f in fs)
    assert sorted(m['files']) == src_files
    assert manifest_lib.verify(second.dirs[kind], m) == []
  assert pusher_exports.serving_scale(second.dirs['serving']) == 3.0
  assert pusher_exports.hub_scale(second.dirs['hub']) == 3.0
  assert pusher_exports.serving_scale(first.dirs['serving']) == 2.0
  # No temporary leftovers.
  for kind in push_layout.KINDS:
    assert [n for n in os.listdir(os.path.join(root, kind))
            if n.startswith('.')] == []


def test_bad_sources_are_refused_before_anything_is_written(tmp_path,
                                                             exports):
  root = str(tmp_path / 'push')
  with pytest.raises(FileNotFoundError, match='hub source .* no tfhub_module'):
    publish.publish(root, {'serving': exports[2.0]['serving'],
                           'hub': exports[2.0]['serving']})
  with pytest.raises(FileNotFoundError, match='serving source .* not a dir'):
    publish.publish(root, {'serving': str(tmp_path / 'nope'),
                           'hub': exports[2.0]['hub']})
  assert not os.path.exists(root)


def test_retention_keeps_exactly_n(tmp_path, exports):
  root = str(tmp_path / 'push')
  for i in range(5):
    publish.publish(root, exports[2.0 if i % 2 else 3.0], keep_versions=2)
    for kind in push_layout.KINDS:
      assert push_layout.list_versions(root, kind) == list(
          range(max(1, i), i + 2))
  for kind in push_layout.KINDS:
    assert _numbered_dirs(root, kind) == ['4', '5']
    assert [n for n in os.listdir(os.path.join(root, kind))
            if n.startswith('.')] == []
  assert publish.apply_retention(root, 1) == [4]
  assert push_layout.list_versions(root, 'serving') == [5]
  assert publish.publish(root, exports[2.0]).version == 6


def test_rollback_republishes_old_version_as_newest(tmp_path, exports):
  root = str(tmp_path / 'push')
  publish.publish(root, exports[2.0], {'source_model': 'm2', 'spans': [1]})
  publish.publish(root, exports[3.0], {'source_model': 'm3', 'spans': [2]})
  result = publish.rollback(root, 1, pipeline_run_id='manual')
  assert result.version == 3
  assert push_layout.list_versions(root, 'serving') == [1, 2, 3]
  for kind in push_layout.KINDS:
    old = push_layout.read_manifest(root, kind, 1)
    new = push_layout.read_manifest(root, kind, 3)
    assert new['rollback_of'] == 1 and new['source_model'] == 'm2'
    assert new['spans'] == [1] and new['files'] == old['files']
  assert pusher_exports.serving_scale(result.dirs['serving']) == 2.0
  assert pusher_exports.hub_scale(result.dirs['hub']) == 2.0


def test_rollback_refuses_missing_bad_and_corrupted_versions(tmp_path,
                                                             exports):
  root = str(tmp_path / 'push')
  publish.publish(root, exports[2.0])
  with pytest.raises(FileNotFoundError, match='cannot roll back to version 7'):
    publish.rollback(root, 7)
  for bad in ('../1', '/etc', '..'):
    with pytest.raises(push_layout.PushLayoutError, match='escapes the push'):
      publish.rollback(root, bad)
  variables = os.path.join(root, 'serving', '1', 'variables',
                           'variables.index')
  with open(variables, 'ab') as f:
    f.write(b'x')
  with pytest.raises(integrity.DamagedVersionError,
                     match='does not match its manifest'):
    publish.rollback(root, 1)
  assert push_layout.list_versions(root, 'serving') == [1]


def test_escaping_roots_and_symlinks_are_refused(tmp_path, exports):
  with pytest.raises(push_layout.PushLayoutError, match='contains ".."'):
    publish.publish(str(tmp_path / 'a' / '..' / 'b'), exports[2.0])
  root = tmp_path / 'push'
  outside = tmp_path / 'elsewhere'
  os.makedirs(root)
  os.makedirs(outside)
  os.symlink(outside, root / 'serving')
  with pytest.raises(push_layout.PushLayoutError,
                     match='outside the push root'):
    publish.publish(str(root), exports[2.0])
  assert os.listdir(outside) == []
  os.unlink(root / 'serving')
  publish.publish(str(root), exports[2.0])
  # A symlinked version folder takes its number, and nothing goes through it.
  os.symlink(outside, root / 'hub' / '2')
  assert publish.publish(str(root), exports[2.0]).version == 3
  assert os.listdir(outside) == []
  assert os.path.islink(root / 'hub' / '2')


def test_negative_retention_is_refused(tmp_path, exports):
  with pytest.raises(ValueError, match='keep_versions must be >= 0'):
    publish.publish(str(tmp_path), exports[2.0], keep_versions=-1)


def test_manifest_is_json_with_checksums(tmp_path, exports):
  r = publish.publish(str(tmp_path), exports[2.0])
  with open(os.path.join(r.dirs['hub'], 'manifest.json')) as f:
    m = json.load(f)
  assert m['files']['tfhub_module.pb'] == manifest_lib.sha256_file(
      os.path.join(exports[2.0]['hub'], 'tfhub_module.pb'))


def test_works_on_a_non_local_gfile_filesystem(tmp_path, exports):
  """ram:// takes the object-store path (tf.io.gfile, no rename, no flock)."""
  root = f'ram://pusher-test-{os.getpid()}-{tmp_path.name}/push'
  for _ in range(3):
    last = publish.publish(root, exports[3.0], {'spans': [2]},
                           keep_versions=2)
  assert last.version == 3
  for kind in push_layout.KINDS:
    assert push_layout.list_versions(root, kind) == [2, 3]
    m = push_layout.read_manifest(root, kind, 3)
    assert manifest_lib.verify(last.dirs[kind], m) == []
  assert publish.rollback(root, 2).version == 4
  assert push_layout.latest_version(root, 'hub') == 4
  # No lock there; the served version is still checked.
  against_4 = served.identity(root)
  with pytest.raises(served.ServedVersionChanged, match='served now: version '
                     '4'):
    publish.publish(root, exports[3.0], validated_against=None)
  assert publish.publish(root, exports[3.0],
                         validated_against=against_4).version == 5


def test_rollback_copies_only_the_files_its_manifests_name(tmp_path,
                                                           exports):
  """A file that lands in the old version after its check is not carried
  into the new one, nor into its manifest."""
  root = str(tmp_path / 'push')
  publish.publish(root, exports[2.0])
  publish.publish(root, exports[3.0])

  def hook(point, kind):
    del kind
    if point == 'reserved':
      for k in push_layout.KINDS:
        with open(os.path.join(root, k, '1', 'extra.txt'), 'w') as f:
          f.write('hi\n')

  result = publish.rollback(root, 1, hook=hook)
  for kind in push_layout.KINDS:
    assert not os.path.exists(os.path.join(result.dirs[kind], 'extra.txt'))
    assert 'extra.txt' not in result.manifests[kind]['files']
  assert integrity.version_problems(root, result.version, verify=True) == []
  assert integrity.version_problems(root, 1) == [
      'serving/1/extra.txt is not named in its manifest',
      'hub/1/extra.txt is not named in its manifest']


def test_rollback_refuses_files_changed_during_its_copy(tmp_path, exports):
  root = str(tmp_path / 'push')
  publish.publish(root, exports[2.0])

  def hook(point, kind):
    if point == 'reserved':
      path = os.path.join(root, 'serving', '1', 'variables',
                          'variables.index')
      with open(path, 'r+b') as f:
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 1]))
    del kind

  with pytest.raises(integrity.DamagedVersionError,
                     match='variables.index has other bytes'):
    publish.rollback(root, 1, hook=hook)
  assert push_layout.numbered(root, 'serving') == [1]


def test_a_push_validated_against_another_served_version_is_refused(
    tmp_path, exports):
  root = str(tmp_path / 'push')
  # Validated with nothing served; something is served by push time.
  publish.publish(root, exports[2.0], validated_against=None)
  against_1 = served.identity(root)
  assert against_1['version'] == 1
  with pytest.raises(served.ServedVersionChanged,
                     match=r'validated against no version; served now: '
                     r'version 1 pushed'):
    publish.publish(root, exports[3.0], validated_against=None)
  assert push_layout.numbered(root, 'serving') == [1]
  publish.publish(root, exports[3.0], validated_against=against_1)
  with pytest.raises(served.ServedVersionChanged,
                     match='validated against version 1 .* served now: '
                     'version 2'):
    publish.publish(root, exports[3.0], validated_against=against_1)
  assert push_layout.numbered(root, 'serving') == [1, 2]


def test_a_number_pushed_again_is_another_served_version(tmp_path, exports):
  """The served identity tells a version number apart from a later push of
  the same number (its folder deleted and pushed again, a copied root)."""
  root = str(tmp_path / 'push')
  publish.publish(root, exports[2.0], {'pipeline_run_id': 'first'})
  first = served.identity(root)
  for kind in push_layout.KINDS:
    shutil.rmtree(os.path.join(root, kind, '1'))
  shutil.rmtree(os.path.join(root, '.reserved'))
  publish.publish(root, exports[2.0], {'pipeline_run_id': 'second'})
  again = served.identity(root)
  assert again['version'] == first['version'] == 1
  assert not served.same(first, again)
  with pytest.raises(served.ServedVersionChanged, match='by run second'):
    publish.publish(root, exports[3.0], validated_against=first)


def test_manifests_record_the_home_and_paths_relative_to_it(tmp_path,
                                                            exports):
  home = tmp_path / 'home'
  root = str(home / 'pushed')
  model = str(home / 'pipeline' / 'EmbeddingTrainer' / 'model' / '5')
  result = publish.publish(root, exports[2.0], {
      'source_model': model, 'blessing': str(tmp_path / 'elsewhere' / 'b')})
  for m in result.manifests.values():
    assert m['home'] == str(home)
    assert m['source_model'] == 'pipeline/EmbeddingTrainer/model/5'
    assert m['blessing'] == str(tmp_path / 'elsewhere' / 'b')  # outside
  # Read in a copy of the home, it names the copy's model.
  copy = tmp_path / 'copy'
  shutil.copytree(home, copy)
  m = push_layout.read_manifest(str(copy / 'pushed'), 'serving', 1)
  assert home_paths.resolve(m['source_model'], str(copy / 'pushed')) == str(
      copy / 'pipeline' / 'EmbeddingTrainer' / 'model' / '5')
  # A rollback keeps the path relative; an old absolute one stays as it is.
  rolled = publish.rollback(str(copy / 'pushed'), 1)
  assert rolled.manifests['serving']['source_model'] == (
      'pipeline/EmbeddingTrainer/model/5')
  assert rolled.manifests['serving']['home'] == str(copy)
  assert home_paths.resolve('/old/home/pipeline/m/1', str(copy)) == (
      '/old/home/pipeline/m/1')
