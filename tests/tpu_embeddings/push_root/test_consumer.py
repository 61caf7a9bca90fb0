"""The consumer library on versions pushed from real exports.

Expected vectors are computed from the tables with numpy.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub

from tests.support import pushed_home
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import declared
from tpu_embeddings.push_root import layout as push_layout


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  return pushed_home.push_two_versions(str(tmp_path_factory.mktemp('consumer')))





@pytest.mark.slow
def test_list_pushed_returns_complete_versions_with_manifests(pushed):
  versions = consumer.list_pushed(pushed['root'])
  assert [v.version for v in versions] == [1, 2]
  assert versions[1].manifest['spans'] == [2]
  assert versions[1].manifest['metrics'] == {'neighbor_recall': 0.2}
  assert versions[1].hub_manifest['kind'] == 'hub'
  assert 'tfhub_module.pb' in versions[1].hub_manifest['files']
  assert versions[0].serving_dir == push_layout.version_dir(
      pushed['root'], 'serving', 1)


@pytest.mark.slow
def test_embed_uses_latest_or_given_version(pushed):
  version, vectors = consumer.embed(pushed['root'], pushed_home.SENTENCES)
  assert version == 2
  for version in (1, 2):
    got_version, vectors = consumer.embed(pushed['root'], pushed_home.SENTENCES,
                                          version=version)
    assert got_version == version
    want = np.stack([pushed_home.sentence_vector(pushed['tables'][version], s)
                     for s in pushed_home.SENTENCES])
    np.testing.assert_allclose(vectors, want, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_neighbors_match_cosine_ranking(pushed):
  version, rows = consumer.neighbors(pushed['root'], 'cat', k=3)
  want_tokens, want_scores = pushed_home.cosine_neighbors(
      pushed['tables'][2], 'cat', 3)
  assert version == 2
  assert [t for t, _ in rows] == want_tokens
  np.testing.assert_allclose([s for _, s in rows], want_scores, rtol=1e-5)
  with pytest.raises(ValueError, match="'zebra' is not in the vocabulary"):
    consumer.neighbors(pushed['root'], 'zebra')
  with pytest.raises(ValueError, match='k must be an integer >= 1'):
    consumer.neighbors(pushed['root'], 'cat', k=0)


def test_pushed_hub_module_loads_with_hub_load_and_keras_layer(pushed):
  hub_dir = push_layout.version_dir(pushed['root'], 'hub', 2)
  want = np.stack([pushed_home.sentence_vector(pushed['tables'][2], s)
                   for s in pushed_home.SENTENCES])
  module = hub.load(hub_dir)
  got = module.signatures['default'](
      sentences=tf.constant(pushed_home.SENTENCES))['default'].numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  layer = hub.KerasLayer(hub_dir, signature='default',
                         signature_outputs_as_dict=True)
  got = layer(
      {'sentences': tf.constant(pushed_home.SENTENCES)})['default'].numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_unknown_tokens_streams_the_vocabulary(tmp_path):
  import tracemalloc
  path = tmp_path / 'vocabulary.txt'
  rows = 1_500_000  # 18 MB of tokens
  path.write_text(''.join(f'token{i}\n' for i in range(rows)))
  tracemalloc.start()
  unknown = declared.unknown_tokens(
      str(path), ['token7 nope token1499999', 'Token7'])
  _, peak = tracemalloc.get_traced_memory()
  tracemalloc.stop()
  assert unknown == [['nope'], ['Token7']]
  # A set of every token takes about 100 MB here; a block of lines 20.
  assert peak < 40 << 20
