"""Tests for tpu_embeddings/push_root/publish.py: versions, atomicity, races, retention."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.support import paths
from tests.support import pusher_exports
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import manifest as manifest_lib
from tpu_embeddings.push_root import publish

REPO = paths.REPO


@pytest.fixture(scope='module')
def exports(tmp_path_factory):
  """{scale: {'serving': dir, 'hub': dir}} for two distinguishable models."""
  base = tmp_path_factory.mktemp('exports')
  out = {}
  for scale in (2.0, 3.0):
    out[scale] = {
        'serving': pusher_exports.write_serving_model(
            str(base / f'serving_{scale}'), scale),
        'hub': pusher_exports.write_hub_module(str(base / f'hub_{scale}'),
                                               scale),
    }
  return out


def _numbered_dirs(root, kind):
  d = os.path.join(root, kind)
  return sorted(n for n in os.listdir(d) if n.isdigit()) if os.path.isdir(
      d) else []


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


_KILL_SCRIPT = r'''
import os, sys, time
sys.path.insert(0, sys.argv[1])
from tpu_embeddings.push_root import publish
root, serving, hub, point, kind, ready = sys.argv[2:8]
def hook(p, k):
  if p == point and k == kind:
    open(ready, 'w').close()
    time.sleep(600)
publish.publish(root, {'serving': serving, 'hub': hub},
                {'source_model': 'killed'}, hook=hook)
'''


def _kill_at(tmp_path, root, sources, point, kind):
  ready = str(tmp_path / f'ready-{point}-{kind}')
  proc = subprocess.Popen(
      [sys.executable, '-c', _KILL_SCRIPT, REPO, root, sources['serving'],
       sources['hub'], point, kind, ready],
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'),
      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
  deadline = time.time() + 80
  while not os.path.exists(ready):
    if proc.poll() is not None:
      raise AssertionError(f'push exited early: {proc.stderr.read()[-2000:]}')
    assert time.time() < deadline, 'push never reached ' + point
    time.sleep(0.05)
  os.kill(proc.pid, signal.SIGKILL)
  proc.wait()
  proc.stderr.close()
  assert proc.returncode == -signal.SIGKILL


def test_push_killed_at_any_point_leaves_no_partial_version(tmp_path, exports):
  root = str(tmp_path / 'push')
  publish.publish(root, exports[2.0], {'source_model': 'good'})
  points = [('reserved', ''), ('copying', 'hub'), ('copying', 'serving'),
            ('before_rename', 'hub'), ('before_rename', 'serving')]
  for point, kind in points:
    _kill_at(tmp_path, root, exports[3.0], point, kind)
    for k in push_layout.KINDS:
      assert push_layout.list_versions(root, k) == [1], (point, kind)
    # TF Serving loads any integer directory under serving/: only 1 is there.
    assert _numbered_dirs(root, 'serving') == ['1'], (point, kind)
    assert pusher_exports.serving_scale(
        push_layout.version_dir(root, 'serving', 1)) == 2.0
  # Killed before serving's rename: hub/<n> was renamed but is not listed.
  leftovers = [n for k in push_layout.KINDS
               for n in os.listdir(os.path.join(root, k)) if n != '1']
  assert leftovers, 'the kills should have left hidden leftovers behind'
  result = publish.publish(root, exports[3.0], {'source_model': 'next'})
  # Numbers reserved by the killed pushes are never reused.
  assert result.version == 2 + len(points)
  for k in push_layout.KINDS:
    assert push_layout.list_versions(root, k) == [1, result.version]
    # The next push removed the dead pushes' leftovers.
    assert sorted(os.listdir(os.path.join(root, k))) == sorted(
        ['1', str(result.version)])
  assert pusher_exports.serving_scale(result.dirs['serving']) == 3.0
  assert pusher_exports.hub_scale(result.dirs['hub']) == 3.0


def test_failed_push_removes_what_it_wrote(tmp_path, exports):
  root = str(tmp_path / 'push')

  def hook(point, kind):
    if point == 'before_rename' and kind == 'serving':
      raise OSError('disk full')

  with pytest.raises(OSError, match='disk full'):
    publish.publish(root, exports[2.0], hook=hook)
  for kind in push_layout.KINDS:
    assert os.listdir(os.path.join(root, kind)) == []
  assert publish.publish(root, exports[2.0]).version == 2


def test_concurrent_pushes_get_distinct_complete_versions(tmp_path, exports):
  root = str(tmp_path / 'push')
  # All pushes hold their reservation at the same moment before copying.
  barrier = threading.Barrier(3, timeout=60)
  results, errors = [], []

  def hook(point, kind):
    del kind
    if point == 'reserved':
      barrier.wait()

  def push(scale):
    try:
      results.append((scale, publish.publish(root, exports[scale],
                                             {'source_model': str(scale)},
                                             hook=hook)))
    except BaseException as e:  # pylint: disable=broad-except
      errors.append(e)

  threads = [threading.Thread(target=push, args=(s,))
             for s in (2.0, 3.0, 2.0)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(120)
  assert not errors, errors
  versions = sorted(r.version for _, r in results)
  assert versions == [1, 2, 3]
  for kind in push_layout.KINDS:
    assert push_layout.list_versions(root, kind) == [1, 2, 3]
  for scale, r in results:
    assert pusher_exports.serving_scale(r.dirs['serving']) == scale
    for kind in push_layout.KINDS:
      m = push_layout.read_manifest(root, kind, r.version)
      assert m['source_model'] == str(scale)
      assert manifest_lib.verify(r.dirs[kind], m) == []


def test_concurrent_processes_get_distinct_versions(tmp_path, exports):
  root = str(tmp_path / 'push')
  script = ('import sys; sys.path.insert(0, sys.argv[1]);'
            'from tpu_embeddings.push_root import publish;'
            'print(publish.publish(sys.argv[2], {"serving": sys.argv[3], '
            '"hub": sys.argv[4]}).version)')
  procs = [subprocess.Popen(
      [sys.executable, '-c', script, REPO, root, exports[2.0]['serving'],
       exports[2.0]['hub']], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')) for _ in range(2)]
  outs = [p.communicate(timeout=120) for p in procs]
  assert [p.returncode for p in procs] == [0, 0], [e[-1000:] for _, e in outs]
  assert sorted(int(o.split()[-1]) for o, _ in outs) == [1, 2]
  for kind in push_layout.KINDS:
    assert push_layout.list_versions(root, kind) == [1, 2]


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
  with pytest.raises(publish.PushError, match='does not match its manifest'):
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
  with pytest.raises(push_layout.PushLayoutError, match='outside the push root'):
    publish.publish(str(root), exports[2.0])
  assert os.listdir(outside) == []
  os.unlink(root / 'serving')
  publish.publish(str(root), exports[2.0])
  os.symlink(outside, root / 'hub' / '2')
  with pytest.raises(push_layout.PushLayoutError, match='outside the push root'):
    publish.publish(str(root), exports[2.0])
  assert os.listdir(outside) == []


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
