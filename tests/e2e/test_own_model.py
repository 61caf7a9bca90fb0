"""The two-tower example module end to end on LocalDagRunner: CSV spans
through CsvExampleGen, named vocabularies, training, validation, both
exports and push; each artifact then used by the client its users use, and
the CLI's `embed`, `neighbors`, `pushed`, `lineage` and `retrain` on what
the model declares. One home for the whole module
(tests/support/two_tower_home.py); the retrain, which pushes version 2 into
it, comes last."""

import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from components import module_file
from pipelines import demo_interactions
from pipelines.cli.main import main
from tests.support import interaction_fixtures
from tests.support import module_clients
from tests.support import summary_lines
from tests.support import two_tower_home
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.exports import export
from tpu_embeddings.exports import fresh_process
from tpu_embeddings.exports import limits
from tpu_embeddings.models import served


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  return two_tower_home.run(tmp_path_factory.mktemp('own-model'))


def _cli(capsys, *argv):
  """(exit code, stdout, stderr) of the CLI run in this process."""
  code = main(list(argv))
  out, err = capsys.readouterr()
  return code, out, err


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


def _one_line_error(code, out, err, words):
  assert code == 2 and out == '', (code, out, err)
  assert err.startswith('error: ') and len(err.strip().splitlines()) == 1
  assert words in err, err


def test_two_tower_neighbors_is_one_line_naming_its_signatures(pushed,
                                                               capsys):
  code, out, err = _cli(capsys, 'neighbors', '--home', pushed['home'],
                        'i1')
  _one_line_error(code, out, err, "this model declares no 'neighbors' "
                  'signature (it declares: candidate, examples, '
                  'serving_default)')
  assert 'serving signatures' in pushed['out']


def test_two_tower_embed_answers_what_the_saved_model_answers(pushed,
                                                              capsys):
  rows = {'user_id': ['u1', 'nobody'], 'history': ['i1 i2', 'i3']}
  argv = [f'--input={name}={value}' for name in rows for value in rows[name]]
  code, out, err = _cli(capsys, 'embed', '--home', pushed['home'], *argv)
  assert code == 0, err
  loaded = tf.saved_model.load(pushed['serving_dir'])
  want = loaded.signatures['serving_default'](
      **{k: tf.constant(v) for k, v in rows.items()})['embedding'].numpy()
  lines = out.splitlines()
  assert [l.split('\t')[:2] for l in lines] == [['i1 i2', 'u1'],
                                                ['i3', 'nobody']]
  got = [[float(x) for x in l.split('\t')[2].split()] for l in lines]
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert ('warning: row 2: 1 of 1 tokens not in the vocabulary (zero '
          'vectors): nobody') in err
  assert 'row 1' not in err


def test_two_tower_embed_of_another_signature_as_json(pushed, capsys):
  code, out, _ = _cli(capsys, 'embed', '--home', pushed['home'],
                      '--signature', 'candidate', '--input', 'item_id=i1',
                      '--input', 'item_category=c1', '--json')
  assert code == 0
  [row] = json.loads(out)['embeddings']
  assert row['inputs'] == {'item_category': 'c1', 'item_id': 'i1'}
  assert len(row['vector']) == interaction_fixtures.module()._m.DIM


@pytest.mark.parametrize('argv, words', [
    (['a sentence'], "signature 'serving_default' takes inputs history, "
     'user_id: give each as --input NAME=VALUE'),
    (['--signature', 'neighbors', 'x'], "declares no 'neighbors' signature"),
    (['--input', 'user_id=u1'], 'missing: history'),
    (['--input', 'user_id'], "--input 'user_id': expected NAME=VALUE"),
    (['--signature', 'examples', 'hello'], "signature 'examples' refused "
     "its input: Could not parse example input, value: 'hello'"),
])
def test_two_tower_embed_errors_are_one_line(pushed, capsys, argv, words):
  _one_line_error(*_cli(capsys, 'embed', '--home', pushed['home'], *argv),
                  words)


def test_pushed_and_lineage_show_the_models_own_fields(pushed, capsys):
  code, out, _ = _cli(capsys, 'pushed', '--home', pushed['home'])
  assert code == 0
  line = out.splitlines()[1]
  assert ' recall_at_10=' in line and 'spans 1 ' in line, out
  assert ' - ' not in line and '=None' not in line, out
  code, out, _ = _cli(capsys, 'lineage', '--home', pushed['home'])
  assert code == 0
  assert out.startswith('pushed version 1 <- trained on span(s) 1\n'), out
  assert 'EmbeddingTrainer (execution' in out and 'warm start' not in out


def test_the_first_run_says_how_it_started(pushed):
  assert ('cold start: tables user, item, category initialized; dense model '
          'initialized') in pushed['out'].splitlines(), pushed['out']


def test_two_tower_large_export_path_checks_its_signatures(pushed,
                                                           tmp_path,
                                                           monkeypatch):
  """A module's exports above OVERLAP_MAX_BYTES are checked in the
  exporting process with graph loaders, no fresh process started."""
  model_uri = os.path.join(pushed['home'], 'pipeline', 'EmbeddingTrainer',
                           'model')
  model_uri = max(glob.glob(os.path.join(model_uri, '*')),
                  key=lambda p: int(os.path.basename(p)))
  monkeypatch.setattr(limits, 'OVERLAP_MAX_BYTES', 0)
  started = []
  monkeypatch.setattr(fresh_process.FreshProcess, '__init__',
                      lambda *args, **kwargs: started.append(args))
  outputs = {kind: str(tmp_path / kind) for kind in export_kinds.NAMES}
  dirs = export.export_model(model_uri, outputs,
                             module_file.from_model(model_uri))
  assert started == []
  for kind in export_kinds.KINDS:
    assert os.path.exists(os.path.join(dirs[kind.name], kind.marker))


def test_two_tower_retrain_reuses_the_homes_model_and_warm_starts(pushed,
                                                                 capsys):
  """Last in this module: it pushes version 2 into the shared home. Given
  no flags, retrain runs the module file and settings `run` recorded."""
  demo_interactions.write_examples(pushed['data'], two_tower_home.SHAPE, span=2)
  code, out, _ = _cli(capsys, 'retrain', '--data', pushed['data'],
                      '--home', pushed['home'])
  assert code == 0, out
  assert out.startswith(
      'retrain: reusing what the home records: module file '
      f'{interaction_fixtures.MODULE_FILE}, example_gen.format="csv", '
      'batch_size=128, epochs=2, regression_margin=0.5\n'), out
  summary_lines.blessed_verdict(out, {'recall_at_10': 'higher'})
  assert '\npushed: version 2\n' in out, out
  assert 'cold start' not in out, out
  assert 'warm start: tables user, item, category from ' in out, out
  assert '; dense model restored from the base (same module file))' in out
  # Version 1 was measured on span 1's eval data, version 2 on span 2's.
  code, out, _ = _cli(capsys, 'pushed', '--home', pushed['home'])
  lines = out.splitlines()
  assert ' eval span 2 ' in lines[1] and '(served)' in lines[1], out
  first = lines.index(next(l for l in lines if l.startswith('      1  ')))
  assert ' eval span 1 ' in lines[first], out
  assert lines[first + 2] == ("         metrics measured on eval span 1, the "
                              "served version's on eval span 2: not "
                              "comparable"), out
  code, out, _ = _cli(capsys, 'lineage', '--home', pushed['home'])
  assert out.startswith('pushed version 2 <- trained on span(s) 2'), out
  assert '<- warm start: ' in out
