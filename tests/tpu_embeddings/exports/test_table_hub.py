"""Tests for tpu_embeddings/exports/table_hub.py (TF1 Hub module)."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
from tensorflow.core.protobuf import saved_model_pb2

from tests.support import artifact_fixtures
from tests.support import exporter_fixtures
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.exports import table_hub

TOKENS = ['red', 'green', 'blue', 'cyan', 'magenta', 'yellow', 'black']
DIM = 4


@pytest.fixture(scope='module')
def module(tmp_path_factory):
  root = tmp_path_factory.mktemp('hub')
  artifact_fixtures.write_tpu_format_model(
      str(root / 'model'), TOKENS,
      spec=artifact_fixtures.skipgram_spec(dim=DIM, optimizer='adagrad'),
      seed=5)
  restored = checkpoint_restore.restore_for_serving(str(root / 'model'))
  export_dir = str(root / 'hub')
  exporter_fixtures.export_hub_module(
      exporter_fixtures.from_variable(restored.table('tokens')),
      restored.vocabulary, export_dir, num_oov_buckets=2,
      l2_regularization=0.01)
  return restored, export_dir


def _run_module(export_dir, sentences, tokens, **module_args):
  with tf.Graph().as_default():
    m = hub.Module(export_dir, **module_args)
    sentence_out = m(tf.constant(sentences))
    token_out = m(dict(tokens=tf.constant(tokens)), signature='tokens')
    with tf.compat.v1.Session() as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.tables_initializer()])
      return session.run([sentence_out, token_out])


def test_layout_and_variables(module):
  restored, export_dir = module
  assert os.path.exists(os.path.join(export_dir, 'tfhub_module.pb'))
  with open(os.path.join(export_dir, 'assets',
                         vocabulary_file.TOKENS_ASSET_FILENAME),
            encoding='utf-8') as f:
    assert f.read().splitlines() == TOKENS
  variables = dict(tf.train.list_variables(
      os.path.join(export_dir, 'variables', 'variables')))
  assert variables == {'embeddings': [len(TOKENS), DIM],
                       'oov_embeddings': [2, DIM],
                       'token_keys': [len(TOKENS)],
                       'token_values': [len(TOKENS)]}
  reader = tf.train.load_checkpoint(
      os.path.join(export_dir, 'variables', 'variables'))
  np.testing.assert_array_equal(reader.get_tensor('embeddings'),
                                restored.table_numpy('tokens'))
  np.testing.assert_array_equal(reader.get_tensor('oov_embeddings'), 0)


def test_table_is_not_a_graph_constant(module):
  restored, export_dir = module
  table = restored.table_numpy('tokens')
  proto = saved_model_pb2.SavedModel()
  with open(os.path.join(export_dir, 'saved_model.pb'), 'rb') as f:
    proto.ParseFromString(f.read())
  assert len(proto.meta_graphs) == 2
  floats = 0
  for meta_graph in proto.meta_graphs:
    for node in meta_graph.graph_def.node:
      value = node.attr['value'].tensor
      if node.op == 'Const' and value.dtype == tf.float32.as_datatype_enum:
        floats += 1
        assert not np.isin(table, tf.make_ndarray(value)).any(), node.name
  assert floats  # the zeros initializer, at least


def test_signatures_in_a_tf1_graph(module):
  restored, export_dir = module
  table = restored.table_numpy('tokens')
  v = {t: table[i] for i, t in enumerate(TOKENS)}
  sentences = ['blue blue', '', 'red unknown', 'red\tgreen  black ']
  tokens = ['cyan', 'unknown', '', 'black']
  got_sentences, got_tokens = _run_module(export_dir, sentences, tokens)
  np.testing.assert_allclose(got_sentences, [
      2 * v['blue'] / np.sqrt(2), np.zeros(DIM), v['red'] / np.sqrt(2),
      (v['red'] + v['green'] + v['black']) / np.sqrt(3)], atol=1e-6)
  np.testing.assert_allclose(got_tokens, [
      v['cyan'], np.zeros(DIM), np.zeros(DIM), v['black']], atol=1e-6)


@pytest.mark.slow
def test_string_keyed_module_answers_the_same(module, tmp_path):
  """The fallback for vocabularies whose fingerprints collide: same vectors,
  and OOV tokens land in the same buckets (which fine-tuning trains)."""
  restored, export_dir = module
  string_dir = str(tmp_path / 'hub')
  exporter_fixtures.export_hub_module(
      exporter_fixtures.from_variable(restored.table('tokens')),
      restored.vocabulary, string_dir, num_oov_buckets=2,
      l2_regularization=0.01, keyed_by_string=True)
  sentences = ['blue blue', '', 'red unknown', 'red\tgreen  black ']
  tokens = TOKENS + ['unknown', '', 'other']
  for got, want in zip(_run_module(string_dir, sentences, tokens),
                       _run_module(export_dir, sentences, tokens)):
    np.testing.assert_allclose(got, want, atol=1e-6)

  def bucket_rows_moved(path, oov_token):
    with tf.Graph().as_default():
      m = hub.Module(path, trainable=True, tags={'train'})
      out = m(dict(tokens=tf.constant([oov_token])), signature='tokens')
      oov = m.variable_map['oov_embeddings']
      step = tf.compat.v1.train.GradientDescentOptimizer(1.0).minimize(
          tf.reduce_sum(tf.square(out - 1.0)))
      with tf.compat.v1.Session() as session:
        session.run([tf.compat.v1.global_variables_initializer(),
                     tf.compat.v1.tables_initializer()])
        session.run(step)
        return (session.run(oov) != 0).any(axis=1).tolist()

  for oov_token in ('unknown', 'other', 'zzz'):
    moved = bucket_rows_moved(export_dir, oov_token)
    assert sum(moved) == 1
    assert bucket_rows_moved(string_dir, oov_token) == moved


def test_default_tags_are_inference_only(module):
  _, export_dir = module
  with tf.Graph().as_default():
    hub.Module(export_dir, trainable=True)
    assert not tf.compat.v1.trainable_variables()
    assert not tf.compat.v1.losses.get_regularization_losses()


def test_train_tags_fine_tune_with_regularization_loss(module):
  restored, export_dir = module
  table = restored.table_numpy('tokens')
  with tf.Graph().as_default():
    m = hub.Module(export_dir, trainable=True, tags={'train'})
    out = m(tf.constant(['red green', 'yellow']))
    losses = tf.compat.v1.losses.get_regularization_losses()
    assert len(losses) == 1
    assert len(tf.compat.v1.trainable_variables()) == 2
    loss = tf.reduce_sum(tf.square(out - 1.0)) + tf.add_n(losses)
    step = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.compat.v1.Session() as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.tables_initializer()])
      before = session.run(m.variable_map['embeddings'])
      reg = session.run(losses[0])
      session.run(step)
      after = session.run(m.variable_map['embeddings'])
  np.testing.assert_array_equal(before[:len(TOKENS)], table)
  np.testing.assert_allclose(reg, 0.01 * np.sum(table**2) / 2, rtol=1e-5)
  changed = np.abs(after - before).max(axis=1) > 0
  # Looked-up rows move with the toy loss; the L2 loss shrinks every other
  # non-zero row too.
  assert changed.all()


def test_export_straight_from_a_trainer_checkpoint(module, tmp_path):
  restored, _ = module
  export_dir = str(tmp_path / 'hub')
  exporter_fixtures.export_hub_module(
      table_hub.TableRows.from_checkpoint(restored.checkpoint_path,
                                           model_layout.table_key('tokens')),
      restored.vocabulary, export_dir)
  got, _ = _run_module(export_dir, ['red green'], ['red'])
  table = restored.table_numpy('tokens')
  np.testing.assert_allclose(got[0], (table[0] + table[1]) / np.sqrt(2),
                             atol=1e-6)


def test_bad_arguments(module, tmp_path):
  restored, export_dir = module
  rows = table_hub.TableRows.from_checkpoint(
      restored.checkpoint_path, model_layout.table_key('tokens'))
  vocab = restored.vocabulary
  with pytest.raises(FileExistsError, match='already exists'):
    exporter_fixtures.export_hub_module(rows, vocab, export_dir)
  with pytest.raises(ValueError, match='num_oov_buckets must be'):
    exporter_fixtures.export_hub_module(rows, vocab, str(tmp_path / 'a'),
                                 num_oov_buckets=0)
  with pytest.raises(ValueError, match='l2_regularization must be'):
    exporter_fixtures.export_hub_module(rows, vocab, str(tmp_path / 'b'),
                                 l2_regularization=-1.0)
  with pytest.raises(ValueError, match="no 2-D float32 tensor 'nope'"):
    exporter_fixtures.export_hub_module(
        table_hub.TableRows.from_checkpoint(restored.checkpoint_path,
                                             'nope'),
        vocab, str(tmp_path / 'c'))
  short = vocabulary_file.TokenCounts(tuple(TOKENS[:3]), (1, 1, 1))
  with pytest.raises(ValueError, match='7 rows but the vocabulary has 3'):
    exporter_fixtures.export_hub_module(rows, short, str(tmp_path / 'd'))
  assert not os.listdir(tmp_path)
