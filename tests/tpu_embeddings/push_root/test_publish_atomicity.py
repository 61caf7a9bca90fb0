"""tpu_embeddings/push_root/publish.py under kills, failures and races.

A push killed or failing at any point leaves no partial version; concurrent
pushes, in threads or processes, get distinct complete versions.
"""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.support import paths
from tests.support import publish_fixtures
from tests.support import pusher_exports
from tests.support.publish_fixtures import numbered_dirs as _numbered_dirs
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import manifest as manifest_lib
from tpu_embeddings.push_root import publish
from tpu_embeddings.push_root import versions

REPO = paths.REPO


@pytest.fixture(scope='module')
def exports(tmp_path_factory):
  return publish_fixtures.write_exports(tmp_path_factory.mktemp('exports'))


_KILL_SCRIPT = r'''
import os, sys, time
sys.path.insert(0, sys.argv[1])
from tpu_embeddings.push_root import publish
from tpu_embeddings.push_root import versions
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


@pytest.mark.slow
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


def test_concurrent_reservations_get_distinct_numbers(tmp_path):
  """What object stores rely on (no lock there): reservations held at the
  same moment never share a number."""
  root = str(tmp_path / 'push')
  barrier = threading.Barrier(3, timeout=60)
  numbers, errors = [], []

  def reserve():
    try:
      with versions.reserve_version(root) as number:
        numbers.append(number)
        barrier.wait()
    except BaseException as e:
      errors.append(e)

  threads = [threading.Thread(target=reserve) for _ in range(3)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(120)
  assert not errors and sorted(numbers) == [1, 2, 3], (errors, numbers)


def test_concurrent_pushes_take_turns_for_distinct_versions(tmp_path,
                                                           exports):
  """On local disk a push holds the push root's lock from its check of the
  served version to its last rename: pushes never overlap."""
  root = str(tmp_path / 'push')
  results, errors = [], []
  active, most = [0], [0]
  guard = threading.Lock()

  def hook(point, kind):
    with guard:
      if point == 'reserved':
        active[0] += 1
        most[0] = max(most[0], active[0])
      elif point == 'renamed' and kind == publish.RENAME_ORDER[-1]:
        active[0] -= 1
    if point == 'reserved':
      time.sleep(0.3)  # time for another push to start, if it could

  def push(scale):
    try:
      results.append((scale, publish.publish(root, exports[scale],
                                             {'source_model': str(scale)},
                                             hook=hook)))
    except BaseException as e:
      errors.append(e)

  threads = [threading.Thread(target=push, args=(s,))
             for s in (2.0, 3.0, 2.0)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(120)
  assert not errors, errors
  assert most[0] == 1
  assert sorted(r.version for _, r in results) == [1, 2, 3]
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
