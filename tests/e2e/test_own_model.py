"""The two-tower example module end to end on LocalDagRunner: CSV spans
through CsvExampleGen, named vocabularies, training, validation, both
exports and push; each artifact then used by the client its users use."""

import contextlib
import io
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from components import module_file
from pipelines import demo_interactions
from pipelines.cli.main import main
from tests.support import interaction_fixtures
from tests.support import module_clients
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import model_restore
from tpu_embeddings.models import served
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout

SHAPE = demo_interactions.Shape(items=300, categories=10, sequences=300,
                                min_length=10, max_length=30)
FAST = ['--module-file', interaction_fixtures.MODULE_FILE,
        '--set', 'example_gen.format="csv"', '--set', 'batch_size=128',
        '--set', 'epochs=2', '--set', 'regression_margin=0.5']


def _edit_line(path: str, number: int, edit) -> bytes:
  """Line `number` (1-based) of a CSV file replaced by edit(line); the new
  line."""
  with open(path, 'rb') as f:
    lines = f.read().split(b'\n')
  lines[number - 1] = edit(lines[number - 1])
  with open(path, 'wb') as f:
    f.write(b'\n'.join(lines))
  return lines[number - 1]


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  root = tmp_path_factory.mktemp('own-model')
  written = demo_interactions.write_examples(str(root / 'data'), SHAPE, span=1)
  # One training record without its user: an empty id, counted and warned.
  _edit_line(written['train'], 5, lambda line: line[line.index(b','):])
  argv = ['run', '--data', str(root / 'data'), '--home', str(root / 'home')]
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    assert main(argv + FAST) == 0
  push_root = str(root / 'home' / 'pushed')
  source = home_paths.resolve(push_layout.read_manifest(
      push_root, 'serving', 1)['source_model'], push_root)
  module = module_file.from_model(source)
  restored = model_restore.restore(source, module)
  serving = restored.serving_model(restored.write_vocabularies(
      str(root / 'vocabularies')))
  return {'root': root, 'out': out.getvalue(), 'push_root': push_root,
          'source': source,
          'restored': restored, 'serving': serving,
          'serving_dir': push_layout.version_dir(push_root, 'serving', 1),
          'hub_dir': push_layout.version_dir(push_root, 'hub', 1)}


def test_run_blesses_pushes_and_the_restore_matches_every_variable(pushed):
  meta = model_layout.read_metadata(pushed['source'])
  assert meta['feature_kinds']['history'] == 'bytes'
  assert os.path.exists(os.path.join(pushed['source'], 'user_module.py'))
  restored = pushed['restored']
  restored.check_matched()  # every dense variable came from the checkpoint
  created = {v.name for v in restored.model.variables}
  assert len(created) == 16, created  # two towers: dense, BN, dense
  keys = {k for k, _ in tf.train.list_variables(
      model_layout.latest_checkpoint(pushed['source']))}
  assert {model_layout.table_key(t) for t in ('user', 'item', 'category')
          } <= keys
  assert any(k.startswith('model/query_tower/') for k in keys)
  assert not any(k.startswith('model/embedding') for k in keys)


def test_an_empty_id_is_counted_and_warned(pushed):
  assert ('warning: input: 1 record(s) with an empty user_id (trained as no '
          'token: an empty id looks up no row)') in pushed['out'], (
              pushed['out'])


def test_a_csv_row_with_an_extra_field_is_named_by_file_and_line(
    pushed, tmp_path, capsys):
  """CsvExampleGen's own message names neither."""
  data = tmp_path / 'data'
  shutil.copytree(pushed['root'] / 'data', data)
  path = str(data / 'span-1' / 'train' / 'part-00000.csv')
  _edit_line(path, 7, lambda line: line.rstrip(b'\r') + b',extra\r')
  assert main(['run', '--data', str(data), '--home', str(tmp_path / 'home')]
              + FAST) == 2
  err = capsys.readouterr().err.strip()
  assert err == (
      f'error: FileBasedExampleGen failed: {path} line 7: 5 fields where the '
      'header has 4 (user_id,history,item_id,item_category); fix the row, or '
      'quote a field that holds a comma; nothing was pushed before'), err


def _sample(pushed):
  return pushed['serving'].sample_inputs()


def test_the_serving_export_answers_as_the_restored_model(pushed):
  loaded = served.from_loaded(tf.saved_model.load(pushed['serving_dir']))
  assert set(loaded) == {'serving_default', 'candidate', 'examples'}
  in_process = pushed['serving'].served()
  for name, inputs in _sample(pushed).items():
    np.testing.assert_allclose(loaded[name](**inputs)['embedding'],
                               in_process[name](**inputs)['embedding'],
                               atol=1e-6)
    session = module_clients.session_answers(pushed['serving_dir'], name,
                                             inputs)
    np.testing.assert_allclose(session['embedding'],
                               in_process[name](**inputs)['embedding'],
                               atol=1e-6)


def test_saved_model_cli_run_answers_every_signature(pushed):
  inputs = _sample(pushed)
  for name in ('serving_default', 'candidate'):
    want = pushed['serving'].served()[name](**inputs[name])['embedding']
    got = module_clients.cli_run(pushed['serving_dir'], name, inputs[name])
    np.testing.assert_allclose(got, want.ravel(), atol=1e-5)


def test_examples_signature_answers_what_infravalidator_sends(pushed):
  """Stock InfraValidator's request builder reads the eval Examples and the
  exporter's serving_model artifact, and fills `examples`'s one input."""
  from tfx.components.infra_validator import request_builder
  from tfx.proto import infra_validator_pb2
  from tfx.types import standard_artifacts
  pipeline = pushed['root'] / 'home' / 'pipeline'
  examples = standard_artifacts.Examples()
  examples.uri = str(sorted(pipeline.glob(
      'FileBasedExampleGen/examples/*'))[-1])
  examples.split_names = '["train", "eval"]'
  model = standard_artifacts.Model()
  model.uri = str(sorted(pipeline.glob(
      'EmbeddingExporter/serving_model/*'))[-1])
  built = request_builder.build_requests(
      'two_tower', model, examples, infra_validator_pb2.RequestSpec(
          tensorflow_serving=infra_validator_pb2.TensorFlowServingRequestSpec(
              signature_names=['examples']),
          split_name='eval', num_examples=3))
  assert len(built) == 3
  for request in built:
    inputs = {k: tf.make_ndarray(v) for k, v in request.inputs.items()}
    out = module_clients.session_answers(pushed['serving_dir'], 'examples',
                                         inputs)
    parsed = tf.train.Example.FromString(inputs['examples'][0])
    raw = {f: np.array([' '.join(v.decode() for v in
                                 parsed.features.feature[f].bytes_list.value)],
                       dtype=object) for f in ('user_id', 'history')}
    want = pushed['serving'].served()['serving_default'](**raw)['embedding']
    np.testing.assert_allclose(out['embedding'], want, atol=1e-6)


def test_the_hub_module_answers_as_the_restored_model(pushed):
  import tensorflow_hub as hub
  inputs = {f: v for f, v in _sample(pushed)['serving_default'].items()}
  want = pushed['serving'].served()['serving_default'](**inputs)['embedding']
  loaded = hub.load(pushed['hub_dir'])
  got = loaded.signatures['default'](
      **{k: tf.constant(v.tolist()) for k, v in inputs.items()})['default']
  np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


def test_the_train_hub_module_fine_tunes(pushed):
  inputs = {'user_id': np.array(['u1', 'u2'], dtype=object),
            'history': np.array(['i1 i2', 'i3'], dtype=object)}
  before, after, regularization, updates = (
      module_clients.fine_tune_hub_module(pushed['hub_dir'], inputs))
  assert len(regularization) == 2  # the query tower's two kernels
  assert len(updates) == 2  # batch norm's moving mean and variance
  moved = {n for n in before if not np.array_equal(before[n], after[n])}
  assert any('query/dense/kernel' in n for n in moved), moved
  assert any('moving_mean' in n for n in moved), moved
  ids = pushed['restored'].ctx.vocabulary('item_id').ids
  items = next(n for n in before if n.endswith('/item:0'))
  rows_moved = np.any(before[items] != after[items], axis=1)
  touched = [ids[t] for t in ('i1', 'i2', 'i3') if t in ids]
  assert rows_moved[touched].all()
  assert rows_moved.sum() == len(touched)  # untouched rows stay


def test_keras_layer_of_the_serving_export_fine_tunes(pushed):
  inputs = {'user_id': np.array(['u1', 'u2'], dtype=object),
            'history': np.array(['i1 i2', 'i3'], dtype=object)}
  before, after, layer = module_clients.fit_keras_layer(
      pushed['serving_dir'], inputs)
  assert layer.losses  # the towers' kernel regularizers
  assert any(not np.array_equal(b, a) for b, a in zip(before, after))


def _broken_module(directory, old: str, new: str) -> str:
  """The example module with `old` replaced by `new`, in `directory`."""
  with open(interaction_fixtures.MODULE_FILE, encoding='utf-8') as f:
    source = f.read()
  assert old in source
  path = os.path.join(str(directory), 'my_model.py')
  with open(path, 'w', encoding='utf-8') as f:
    f.write(source.replace(old, new))
  return path


BROKEN = {
    # Refused as the run starts, before any component: the contract check
    # builds the serving model on an untrained instance.
    'signatures raising': (
        'def signatures(model, embed, ctx):\n',
        'def signatures(model, embed, ctx):\n  raise RuntimeError("boom")\n',
        '', 'signatures raised RuntimeError: boom'),
    'model_fn returning None': (
        '  del ctx\n  return TwoTower()\n', '  del ctx\n  return None\n',
        '', "signature 'serving_default' raised AttributeError: 'NoneType' "
        "object has no attribute 'query' (model was None: model_fn returned "
        'None)'),
    # Found by the trainer, which keeps what it did for the rerun.
    'loss_fn raising': (
        '  """In-batch softmax, logQ-corrected: this replica\'s share of the '
        'loss."""\n',
        '  """In-batch softmax."""\n  raise RuntimeError("boom")\n',
        'EmbeddingTrainer', 'loss_fn (on a zero batch, to create the '
        "model's variables) raised RuntimeError: boom"),
}


@pytest.mark.parametrize('case', sorted(BROKEN))
def test_a_failing_module_file_is_one_line_naming_it(tmp_path, capsys, case):
  old, new, node, what = BROKEN[case]
  module = _broken_module(tmp_path, old, new)
  demo_interactions.write_examples(str(tmp_path / 'data'), SHAPE, span=1)
  argv = ['run', '--data', str(tmp_path / 'data'), '--home',
          str(tmp_path / 'home'), '--module-file', module,
          '--set', 'example_gen.format="csv"', '--set', 'batch_size=128',
          '--set', 'epochs=0', '--set', 'train_steps=4']
  assert main(argv) == 5
  err = [line for line in capsys.readouterr().err.splitlines()
         if line.startswith('error: ')]
  assert len(err) == 1, err
  if node:
    assert err[0].startswith(f'error: {node} failed: module file {module}: '
                             f'{what}; kept '), err[0]
  else:
    assert err[0] == f'error: module file {module}: {what}', err[0]
    assert not (tmp_path / 'home').exists()
