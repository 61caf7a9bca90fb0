"""tpu_embeddings/exports/table_serving.py through its clients.

Fresh processes load the export as TF Serving's session loader,
`saved_model_cli run` and tf.saved_model.load do; hub.KerasLayer fine-tunes it.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.support import paths
from tests.support import serving_clients
from tests.support import serving_export_fixtures
from tests.support.serving_export_fixtures import TOKENS


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
  return serving_export_fixtures.export(tmp_path_factory.mktemp('serving'))


def _expected_answers(table):
  """What each client must answer to `serving_clients.INPUTS`, from the
  table alone."""
  ids = {t: i for i, t in enumerate(TOKENS)}
  dim = table.shape[1]
  row = lambda t: table[ids[t]] if t in ids else np.zeros(dim, np.float32)
  expected = {'lookup/embeddings': np.stack(
      [row(t) for t in serving_clients.INPUTS['lookup']['tokens']])}
  sentences = [s.split() for s in
               serving_clients.INPUTS['serving_default']['sentences']]
  expected['serving_default/embeddings'] = np.stack([
      np.sum([row(t) for t in s], axis=0) / np.sqrt(len(s)) if s else
      np.zeros(dim, np.float32) for s in sentences])
  unit = table / np.linalg.norm(table, axis=1, keepdims=True)
  k = serving_clients.INPUTS['neighbors']['k']
  tokens, scores = [], []
  for query in serving_clients.INPUTS['neighbors']['tokens']:
    if query not in ids:
      tokens.append([b''] * k)
      scores.append([0.0] * k)
      continue
    cosine = unit @ unit[ids[query]]
    cosine[ids[query]] = -np.inf
    order = np.argsort(-cosine)[:k]
    tokens.append([TOKENS[i].encode() for i in order])
    scores.append(cosine[order])
  expected['neighbors/tokens'] = np.array(tokens, dtype=object)
  expected['neighbors/scores'] = np.array(scores, np.float32)
  return expected


@pytest.mark.slow
def test_every_signature_answers_through_each_client(exported, tmp_path):
  """Fresh processes: tf.saved_model.load, a TF1 session loader (TF Serving's
  path) and `saved_model_cli run` answer every signature with the table's
  values, twice in one session (anonymous resources fail the second way)."""
  table, export_dir = exported
  cli = os.path.join(os.path.dirname(sys.executable), 'saved_model_cli')
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  # Both ways in one process: each loads the export anew.
  commands = {'ways': [sys.executable, '-m', 'tests.support.serving_clients',
                       ','.join(serving_clients.WAYS), export_dir,
                       str(tmp_path)]}
  for signature in serving_clients.INPUTS:
    commands[f'cli-{signature}'] = [
        cli, 'run', '--dir', export_dir, '--tag_set', 'serve',
        '--signature_def', signature,
        '--input_exprs', serving_clients.saved_model_cli_exprs(signature),
        '--outdir', str(tmp_path / f'cli-{signature}')]
  root = paths.REPO
  running = {name: subprocess.Popen(command, cwd=root, env=env,
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name, command in commands.items()}
  for name, process in running.items():
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, f'{name}:\n{stderr[-3000:]}'
    if name.startswith('cli-'):
      assert 'Result for output key' in stdout, stdout

  answers = serving_clients.answers(str(tmp_path))
  answers['saved_model_cli'] = {
      f'{signature}/{output}': np.load(
          str(tmp_path / f'cli-{signature}' / f'{output}.npy'),
          allow_pickle=True)
      for signature, output in (('lookup', 'embeddings'),
                                ('serving_default', 'embeddings'),
                                ('neighbors', 'tokens'),
                                ('neighbors', 'scores'))}
  expected = _expected_answers(table)
  for way, got in answers.items():
    assert sorted(got) == sorted(expected), way
    for key, want in expected.items():
      if want.dtype == object:
        assert got[key].tolist() == want.tolist(), (way, key)
      else:
        np.testing.assert_allclose(got[key], want, atol=1e-6,
                                   err_msg=f'{way} {key}')


def test_no_anonymous_resource_in_the_saved_graph(exported):
  """Session loaders re-create anonymous resources, empty, on every run."""
  from tensorflow.core.protobuf import saved_model_pb2
  _, export_dir = exported
  proto = saved_model_pb2.SavedModel()
  with open(os.path.join(export_dir, 'saved_model.pb'), 'rb') as f:
    proto.ParseFromString(f.read())
  nodes = [node for graph in proto.meta_graphs
           for node in list(graph.graph_def.node) + [
               n for function in graph.graph_def.library.function
               for n in function.node_def]]
  # Tokens are found in saved arrays: no table is built at load.
  assert not any(node.op == 'HashTableV2' for node in nodes)
  for node in nodes:
    assert not node.op.startswith('Anonymous'), node.op
    if node.op == 'VarHandleOp':
      assert node.attr['shared_name'].s not in (b'', b'_AnonymousVar'), (
          node.name)


@pytest.mark.slow
def test_fine_tunes_as_a_keras_layer(exported):
  """A TF2 reusable SavedModel: hub.KerasLayer(trainable=True) trains the
  table rows of the tokens in the batch, and only those."""
  import tensorflow_hub as hub
  table, export_dir = exported
  loaded = tf.saved_model.load(export_dir)
  assert [v.shape for v in loaded.trainable_variables] == [table.shape]
  # The table, its row norms, the line ends and the lookup's two arrays.
  assert len(loaded.variables) == 5 and not loaded.regularization_losses
  np.testing.assert_allclose(
      loaded(tf.constant(['cat sat', ''])),
      loaded.signatures['serving_default'](
          sentences=tf.constant(['cat sat', '']))['embeddings'], atol=1e-7)
  # The table's gradient is sparse: a [V, dim] dense one per step would
  # cost a table's worth of memory.
  with tf.GradientTape() as tape:
    total = tf.reduce_sum(loaded(tf.constant(['cat sat', 'nope'])))
  gradient, = tape.gradient(total, loaded.trainable_variables)
  assert isinstance(gradient, tf.IndexedSlices)

  layer = hub.KerasLayer(export_dir, trainable=True)
  sentences = tf.keras.Input([], dtype=tf.string)
  model = tf.keras.Model(sentences,
                         tf.keras.layers.Dense(1)(layer(sentences)))
  model.compile(tf.keras.optimizers.SGD(0.5), 'mse')
  assert len(layer.trainable_weights) == 1
  before = layer.trainable_weights[0].numpy().copy()
  np.testing.assert_array_equal(before, table)
  model.fit(np.array(['cat sat', 'the nope', 'cat']),
            np.array([1.0, -1.0, 2.0]), epochs=3, batch_size=3, verbose=0)
  moved = np.abs(layer.trainable_weights[0].numpy() - before).sum(axis=1) > 0
  assert sorted(np.flatnonzero(moved)) == sorted(
      TOKENS.index(t) for t in ('cat', 'sat', 'the'))
