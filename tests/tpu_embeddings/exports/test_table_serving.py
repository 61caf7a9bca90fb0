"""Tests for tpu_embeddings/exports/table_serving.py: layout, signatures, the
token asset.

How the export answers its clients (session loaders, `saved_model_cli`,
hub.KerasLayer) is in test_serving_export_clients.py.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.support import artifact_fixtures
from tests.support import serving_export_fixtures
from tests.support.serving_export_fixtures import TOKENS
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import token_ids
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.exports import table_serving
from tpu_embeddings.models.skipgram_features import skipgram_spec


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
  return serving_export_fixtures.export(tmp_path_factory.mktemp('serving'))


def test_layout_has_vocabulary_asset_and_no_slots(exported):
  table, export_dir = exported
  assert os.path.exists(os.path.join(export_dir, 'saved_model.pb'))
  with open(os.path.join(export_dir, 'assets',
                         vocabulary_file.TOKENS_ASSET_FILENAME),
            encoding='utf-8') as f:
    assert f.read().splitlines() == TOKENS
  keys = dict(tf.train.list_variables(
      os.path.join(export_dir, 'variables', 'variables')))
  keys.pop('_CHECKPOINTABLE_OBJECT_GRAPH')
  assert keys[table_serving.table_checkpoint_key()] == list(table.shape)
  for key in keys:
    for slot in ('momenta', 'velocities', 'accumulators', 'linears'):
      assert slot not in key


@pytest.mark.slow
def test_saved_model_cli_lists_three_signatures(exported):
  _, export_dir = exported
  cli = os.path.join(os.path.dirname(sys.executable), 'saved_model_cli')
  out = subprocess.run([cli, 'show', '--all', '--dir', export_dir],
                       capture_output=True, text=True, check=True).stdout
  for name in serving_contract.SIGNATURES:
    assert f"signature_def['{name}']" in out
  assert 'accumulator' not in out and 'momenta' not in out


def test_signatures_match_table_rows(exported):
  table, export_dir = exported
  loaded = tf.saved_model.load(export_dir)
  ids = {t: i for i, t in enumerate(TOKENS)}
  got = loaded.signatures['lookup'](
      tokens=tf.constant(['cat', 'nope', '', 'é']))['embeddings'].numpy()
  np.testing.assert_allclose(got[0], table[ids['cat']], atol=1e-6)
  np.testing.assert_array_equal(got[1], np.zeros(8, np.float32))
  np.testing.assert_array_equal(got[2], np.zeros(8, np.float32))
  np.testing.assert_allclose(got[3], table[ids['é']], atol=1e-6)
  # A batch without OOV tokens takes the path that skips the zeroing.
  got = loaded.signatures['lookup'](
      tokens=tf.constant(['é', 'the']))['embeddings'].numpy()
  np.testing.assert_allclose(got, table[[ids['é'], ids['the']]], atol=1e-6)

  sentences = ['cat cat', '', 'the nope', '  sat\ton mat ']
  got = loaded.signatures['serving_default'](
      sentences=tf.constant(sentences))['embeddings'].numpy()
  v = lambda t: table[ids[t]]
  np.testing.assert_allclose(got[0], 2 * v('cat') / np.sqrt(2), atol=1e-6)
  np.testing.assert_array_equal(got[1], np.zeros(8, np.float32))
  # OOV adds nothing to the sum but counts in sqrt(n).
  np.testing.assert_allclose(got[2], v('the') / np.sqrt(2), atol=1e-6)
  np.testing.assert_allclose(got[3], (v('sat') + v('on') + v('mat')) /
                             np.sqrt(3), atol=1e-6)


def test_neighbors_are_cosine_top_k(exported):
  table, export_dir = exported
  loaded = tf.saved_model.load(export_dir)
  out = loaded.signatures['neighbors'](tokens=tf.constant(['cat', 'nope']),
                                       k=tf.constant(3))
  unit = table / np.linalg.norm(table, axis=1, keepdims=True)
  cosine = unit @ unit[1]
  cosine[1] = -np.inf
  order = np.argsort(-cosine)[:3]
  assert [t.decode() for t in out['tokens'].numpy()[0]] == [
      TOKENS[i] for i in order]
  np.testing.assert_allclose(out['scores'].numpy()[0], cosine[order],
                             atol=1e-6)
  assert list(out['tokens'].numpy()[1]) == [b''] * 3
  # k larger than the other rows is clipped.
  out = loaded.signatures['neighbors'](tokens=tf.constant(['cat']),
                                       k=tf.constant(50))
  assert out['tokens'].shape == (1, len(TOKENS) - 1)


@pytest.mark.slow
def test_neighbors_drop_only_the_query_itself(tmp_path):
  """A row identical to the query's is a neighbour (cosine 1); the query is not.
  """
  table = np.random.default_rng(5).normal(size=[len(TOKENS), 4]).astype(
      np.float32)
  table[3] = table[1]  # 'on' duplicates 'cat'
  model_uri = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(
      model_uri, TOKENS, spec=skipgram_spec(dim=4), table=table)
  export_dir = str(tmp_path / 'serving')
  table_serving.export_serving_model(
      checkpoint_restore.restore_for_serving(model_uri), export_dir)
  neighbors = tf.saved_model.load(export_dir).signatures['neighbors']
  for query, twin in (('cat', 'on'), ('on', 'cat')):
    out = neighbors(tokens=tf.constant([query]), k=tf.constant(2))
    got = [t.decode() for t in out['tokens'].numpy()[0]]
    assert got[0] == twin and query not in got
    np.testing.assert_allclose(out['scores'].numpy()[0, 0], 1.0, atol=1e-6)


def test_no_variable_is_read_sparsely(exported):
  """ResourceGather would switch a loaded variable to copy-on-read, and
  every dense read of it (the table in `neighbors`, the token keys in every
  lookup) would then copy it whole."""
  from tensorflow.core.protobuf import saved_model_pb2
  _, export_dir = exported
  proto = saved_model_pb2.SavedModel()
  with open(os.path.join(export_dir, 'saved_model.pb'), 'rb') as f:
    proto.ParseFromString(f.read())
  ops = [node.op for graph in proto.meta_graphs
         for function in graph.graph_def.library.function
         for node in function.node_def]
  # No variable is read sparsely: the table, the token lookup's arrays and
  # the line ends are all read densely, then gathered.
  assert 'ReadVariableOp' in ops and 'ResourceGather' not in ops


def test_refuses_non_empty_export_dir(exported, tmp_path):
  _, export_dir = exported
  with pytest.raises(FileExistsError, match='not empty'):
    table_serving.export_serving_model(
        checkpoint_restore.restore_for_serving(
            os.path.join(os.path.dirname(export_dir), 'model')), export_dir)


@pytest.mark.slow
def test_tpu_and_cpu_trainer_checkpoints_export_the_same(tmp_path):
  """TPUEmbedding (CPU mode = TPU format) vs TPUEmbeddingForServing + slots."""
  from tpu_embeddings.artifacts import model_layout
  spec = skipgram_spec(dim=4, optimizer='adagrad').with_vocabulary_size(
      'tokens', len(TOKENS))
  table = np.random.default_rng(1).normal(size=[len(TOKENS), 4]).astype(
      np.float32)
  tpu_uri = str(tmp_path / 'tpu')
  artifact_fixtures.write_tpu_format_model(tpu_uri, TOKENS, spec=spec,
                                           table=table)
  # The trainer's CPU adapter: TPUEmbeddingForServing built with the optimizer.
  cpu_uri = str(tmp_path / 'cpu')
  os.makedirs(cpu_uri)
  spec.save(cpu_uri)
  vocabulary_file.write(cpu_uri, vocabulary_file.read(tpu_uri))
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  embedding.embedding_tables[
      list(embedding.embedding_tables)[0]].assign(table)
  tf.train.CheckpointManager(
      tf.train.Checkpoint(**{model_layout.EMBEDDING_KEY: embedding}),
      model_layout.checkpoint_dir(cpu_uri), max_to_keep=1).save()

  exported = {}
  for name, uri in (('tpu', tpu_uri), ('cpu', cpu_uri)):
    ckpt = model_layout.latest_checkpoint(uri)
    assert model_layout.slot_key('tokens', 'accumulators') in dict(
        tf.train.list_variables(ckpt))
    export_dir = str(tmp_path / f'{name}-serving')
    table_serving.export_serving_model(
        checkpoint_restore.restore_for_serving(uri), export_dir)
    variables = os.path.join(export_dir, 'variables', 'variables')
    assert sorted(k for k, _ in tf.train.list_variables(variables)) == sorted(
        ['_CHECKPOINTABLE_OBJECT_GRAPH', table_serving.table_checkpoint_key(),
         'row_norms/.ATTRIBUTES/VARIABLE_VALUE',
         'tokens_by_id/line_ends/.ATTRIBUTES/VARIABLE_VALUE',
         'token_ids/token_keys/.ATTRIBUTES/VARIABLE_VALUE',
         'token_ids/token_values/.ATTRIBUTES/VARIABLE_VALUE'])
    exported[name] = tf.train.load_checkpoint(variables).get_tensor(
        table_serving.table_checkpoint_key())
  np.testing.assert_array_equal(exported['tpu'], table)
  np.testing.assert_array_equal(exported['cpu'], table)


@pytest.mark.slow
def test_string_keyed_token_table_answers_the_same(exported, tmp_path):
  """The fallback for vocabularies whose fingerprints collide."""
  table, export_dir = exported
  restored = checkpoint_restore.restore_for_serving(
      os.path.join(os.path.dirname(export_dir), 'model'))
  string_dir = str(tmp_path / 'string-keyed')
  table_serving.export_serving_model(restored, string_dir,
                                      keyed_by_string=True)
  queries = tf.constant(TOKENS + ['nope', '', 'the'])
  got = {}
  for name, path in (('fingerprint', export_dir), ('string', string_dir)):
    loaded = tf.saved_model.load(path)
    got[name] = loaded.signatures['lookup'](tokens=queries)['embeddings']
    out = loaded.signatures['neighbors'](tokens=tf.constant(['cat', 'x']),
                                         k=tf.constant(2))
    assert out['tokens'].numpy()[1].tolist() == [b'', b'']
    assert set(out['tokens'].numpy()[0]) <= {t.encode() for t in TOKENS}
  expected = np.concatenate([table, np.zeros([2, 8], np.float32),
                             table[:1]])
  np.testing.assert_allclose(got['fingerprint'], expected, atol=1e-6)
  np.testing.assert_allclose(got['string'], expected, atol=1e-6)


@pytest.mark.slow
def test_export_from_a_streamed_token_file(exported, tmp_path):
  """The executor's path: vocabulary.tsv streamed into the asset, no tokens
  in memory; the asset and the lookups match vocabulary_file.read."""
  table, export_dir = exported
  model_uri = os.path.join(os.path.dirname(export_dir), 'model')
  tokens_path = str(tmp_path / vocabulary_file.TOKENS_ASSET_FILENAME)
  count, known = vocabulary_file.write_tokens_asset(model_uri, tokens_path,
                                                    lines=(0, 5))
  vocab = vocabulary_file.read(model_uri)
  assert count == len(vocab) and known == {0: vocab.tokens[0],
                                           5: vocab.tokens[5]}
  with open(tokens_path, encoding='utf-8') as f:
    assert f.read().splitlines() == list(vocab.tokens)
  assert not token_ids.sorted_keys(tokens_path).collide
  restored = checkpoint_restore.restore_for_serving(model_uri,
                                                    read_vocabulary=False)
  assert restored.vocabulary is None
  streamed_dir = str(tmp_path / 'streamed')
  table_serving.export_serving_model(restored, streamed_dir,
                                      tokens_path=tokens_path)
  got = tf.saved_model.load(streamed_dir).signatures['lookup'](
      tokens=tf.constant(list(vocab.tokens)))['embeddings']
  np.testing.assert_allclose(got, table, atol=1e-6)


@pytest.mark.parametrize('content,line', [
    ('a\t1\n\t2\n', 2), ('a\t1\nb 2\n', 2), ('a\t1\nb\t2\tx\n', 2),
    ('a\tx\n', 1)])
def test_streamed_token_file_names_the_bad_line(tmp_path, content, line):
  path = tmp_path / vocabulary_file.VOCABULARY_FILENAME
  path.write_text(content, encoding='utf-8')
  with pytest.raises(vocabulary_file.VocabularyError, match=f'line {line}:'):
    vocabulary_file.write_tokens_asset(str(tmp_path), str(tmp_path / 't.txt'))
  with pytest.raises(vocabulary_file.VocabularyError, match=f'line {line}:'):
    vocabulary_file.read(str(tmp_path))


def test_streamed_token_file_across_blocks(tmp_path):
  tokens = [f'tok{i}é' for i in range(5000)]
  (tmp_path / vocabulary_file.VOCABULARY_FILENAME).write_text(
      ''.join(f'{t}\t{5000 - i}\n' for i, t in enumerate(tokens)),
      encoding='utf-8')
  out = str(tmp_path / 't.txt')
  # Blocks of a few hundred lines, cut at line ends.
  blocks = list(vocabulary_file.line_blocks(
      str(tmp_path / vocabulary_file.VOCABULARY_FILENAME), block_bytes=4096))
  assert len(blocks) > 10 and all(b.endswith(b'\n') for b in blocks)
  count, known = vocabulary_file.write_tokens_asset(
      str(tmp_path), out, lines=(0, 2500, 4999), block_bytes=4096)
  assert count == 5000
  assert known == {0: tokens[0], 2500: tokens[2500], 4999: tokens[4999]}
  with open(out, encoding='utf-8') as f:
    assert f.read().splitlines() == tokens
  assert vocabulary_file.count_lines(out) == 5000
