"""A push killed on an object store (ram://, which takes the tf.io.gfile
path: no atomic rename, a version is copied in file by file) is never listed
as complete nor served silently, whichever file it was killed at: TF Serving
would try the partial serving folder, so readers call it the served version,
damaged, and refuse it naming the rollback.

The kill is a BaseException raised from `tf.io.gfile.copy` at the k-th copy,
with every deletion disabled: a killed process cleans nothing up.
"""

import os

import pytest
import tensorflow as tf

from tests.support import publish_fixtures
from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import publish
from tpu_embeddings.push_root import status


class _Killed(BaseException):
  """The process dies here."""


@pytest.fixture(scope='module')
def exports(tmp_path_factory):
  return publish_fixtures.write_exports(tmp_path_factory.mktemp('exports'))


def _copies_of_one_push(exports, monkeypatch, name):
  copied = []
  original = tf.io.gfile.copy

  def counting(src, dst, overwrite=False):
    copied.append(dst)
    return original(src, dst, overwrite)
  with monkeypatch.context() as patch:
    patch.setattr(tf.io.gfile, 'copy', counting)
    publish.publish(f'ram://{name}/push', exports[2.0])
  return copied


def test_a_push_killed_at_any_copy_is_never_listed_or_served(
    tmp_path, exports, monkeypatch):
  name = f'killed-{os.getpid()}-{tmp_path.name}'
  copied = _copies_of_one_push(exports, monkeypatch, f'{name}-count')
  # Both kinds, file by file, the markers among them.
  assert any(c.endswith('/serving/1/saved_model.pb') for c in copied)
  assert any(c.endswith('/hub/1/tfhub_module.pb') for c in copied)
  original = tf.io.gfile.copy
  for k in range(len(copied)):
    root = f'ram://{name}-{k}/push'
    publish.publish(root, exports[2.0])

    def dying(src, dst, overwrite=False, k=k, done=[]):  # noqa: B006
      if len(done) == k:
        raise _Killed(dst)
      done.append(dst)
      return original(src, dst, overwrite)
    with monkeypatch.context() as patch:
      patch.setattr(tf.io.gfile, 'copy', dying)
      patch.setattr(file_system, 'remove_tree', lambda *a, **kw: None)
      with pytest.raises(_Killed):
        publish.publish(root, exports[3.0])
    assert push_layout.list_versions(root, 'serving') == [1], k
    states = {v.version: v.state for v in status.scan(root)}
    assert states[1] == 'intact' and states.get(2) != 'intact', (k, states)
    if status.served_version(root) == 1:
      assert consumer.version_dirs(root)['serving'].endswith('/serving/1')
    else:
      with pytest.raises(integrity.DamagedVersionError,
                         match=r'version 2 .* rollback .* --to 1`'):
        consumer.version_dirs(root)
    # The next push takes a number of its own and is served.
    assert publish.publish(root, exports[3.0]).version == 3, k
    assert status.served_version(root) == 3, k
