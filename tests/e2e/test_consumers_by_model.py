"""`embed`, `neighbors`, `pushed`, `lineage` and `retrain` on what a model
declares: the two-tower example and skip-gram, each run once through the
pipeline (one home per model for the whole module)."""

import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from components import module_file
from pipelines import demo_data
from pipelines import demo_interactions
from pipelines.cli.main import main
from tests.support import cli_runs
from tests.support import interaction_fixtures
from tests.support import summary_lines
from tests.support import tiny_pipeline
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.exports import export
from tpu_embeddings.exports import fresh_process
from tpu_embeddings.exports import limits
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import layout as push_layout

SHAPE = demo_interactions.Shape(items=300, categories=10, sequences=300,
                                min_length=10, max_length=30)
TWO_TOWER = ['--module-file', interaction_fixtures.MODULE_FILE,
             '--set', 'example_gen.format="csv"', '--set', 'batch_size=128',
             '--set', 'epochs=2', '--set', 'regression_margin=0.5']


def _cli(capsys, *argv):
  """(exit code, stdout, stderr) of the CLI run in this process."""
  code = main(list(argv))
  out, err = capsys.readouterr()
  return code, out, err


_run = cli_runs.run


@pytest.fixture(scope='module')
def two_tower(tmp_path_factory):
  root = tmp_path_factory.mktemp('two-tower')
  data, home = str(root / 'data'), str(root / 'home')
  demo_interactions.write_examples(data, SHAPE, span=1)
  ran = _run('run', '--data', data, '--home', home, *TWO_TOWER)
  assert ran[0] == 0, ran[1]
  return {'data': data, 'home': home, 'ran': ran[1],
          'serving_dir': push_layout.version_dir(
              str(root / 'home' / 'pushed'), 'serving', 1)}


@pytest.fixture(scope='module')
def skipgram(tmp_path_factory):
  root = tmp_path_factory.mktemp('skipgram')
  data, home = str(root / 'data'), str(root / 'home')
  demo_data.generate(data, spans=1, seed=5, shape=tiny_pipeline.TINY)
  ran = _run('run', '--data', data, '--home', home, *tiny_pipeline.FAST)
  assert ran[0] == 0, ran[1]
  serving_dir = push_layout.version_dir(str(root / 'home' / 'pushed'),
                                        'serving', 1)
  with open(f'{serving_dir}/assets/vocabulary.txt', encoding='utf-8') as f:
    tokens = f.read().split()
  return {'data': data, 'home': home, 'ran': ran[1], 'tokens': tokens,
          'serving_dir': serving_dir}


def _one_line_error(code, out, err, words):
  assert code == 2 and out == '', (code, out, err)
  assert err.startswith('error: ') and len(err.strip().splitlines()) == 1
  assert words in err, err


def test_two_tower_neighbors_is_one_line_naming_its_signatures(two_tower,
                                                               capsys):
  code, out, err = _cli(capsys, 'neighbors', '--home', two_tower['home'],
                        'i1')
  _one_line_error(code, out, err, "this model declares no 'neighbors' "
                  'signature (it declares: candidate, examples, '
                  'serving_default)')
  assert 'serving signatures' in two_tower['ran']


def test_two_tower_embed_answers_what_the_saved_model_answers(two_tower,
                                                              capsys):
  rows = {'user_id': ['u1', 'nobody'], 'history': ['i1 i2', 'i3']}
  argv = [f'--input={name}={value}' for name in rows for value in rows[name]]
  code, out, err = _cli(capsys, 'embed', '--home', two_tower['home'], *argv)
  assert code == 0, err
  loaded = tf.saved_model.load(two_tower['serving_dir'])
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


def test_two_tower_embed_of_another_signature_as_json(two_tower, capsys):
  code, out, _ = _cli(capsys, 'embed', '--home', two_tower['home'],
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
def test_two_tower_embed_errors_are_one_line(two_tower, capsys, argv, words):
  _one_line_error(*_cli(capsys, 'embed', '--home', two_tower['home'], *argv),
                  words)


def test_skipgram_embed_and_neighbors_still_answer(skipgram, capsys):
  token = skipgram['tokens'][0]
  code, out, _ = _cli(capsys, 'neighbors', '--home', skipgram['home'], '-k',
                      '3', '--json', token)
  assert code == 0
  assert len(json.loads(out)['neighbors']) == 3
  code, out, _ = _cli(capsys, 'embed', '--home', skipgram['home'],
                      f'{token} {token}', '--json')
  assert code == 0
  loaded = tf.saved_model.load(skipgram['serving_dir'])
  want = loaded.signatures['serving_default'](
      sentences=tf.constant([f'{token} {token}']))['embeddings'].numpy()
  [row] = json.loads(out)['embeddings']
  assert row['text'] == f'{token} {token}' and row['unknown_tokens'] == []
  np.testing.assert_allclose([row['vector']], want, atol=1e-6)
  _one_line_error(*_cli(capsys, 'neighbors', '--home', skipgram['home'],
                        'no-such-token'), "is not in the vocabulary")
  root = str(skipgram['home']) + '/pushed'
  assert consumer.unknown_tokens(root, [f'{token} zzz', token]) == (
      1, [['zzz'], []])
  assert 'nearest neighbours' in skipgram['ran']


@pytest.mark.parametrize('model, metric', [('two_tower', 'recall_at_10'),
                                           ('skipgram', 'recall_at_k')])
def test_pushed_and_lineage_show_each_models_own_fields(request, capsys,
                                                        model, metric):
  home = request.getfixturevalue(model)['home']
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert code == 0
  line = out.splitlines()[1]
  assert f' {metric}=' in line and 'spans 1 ' in line, out
  assert ' - ' not in line and '=None' not in line, out
  code, out, _ = _cli(capsys, 'lineage', '--home', home)
  assert code == 0
  assert out.startswith('pushed version 1 <- trained on span(s) 1\n'), out
  assert 'EmbeddingTrainer (execution' in out and 'warm start' not in out


def test_two_tower_large_export_path_checks_its_signatures(two_tower,
                                                           tmp_path,
                                                           monkeypatch):
  """A module's exports above OVERLAP_MAX_BYTES are checked in the
  exporting process with graph loaders, no fresh process started."""
  model_uri = os.path.join(two_tower['home'], 'pipeline', 'EmbeddingTrainer',
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


@pytest.mark.parametrize('model, start', [
    ('two_tower', 'cold start: tables user, item, category initialized; '
     'dense model initialized'),
    ('skipgram', 'cold start: tables tokens, contexts initialized')])
def test_the_first_run_says_how_it_started(request, model, start):
  ran = request.getfixturevalue(model)['ran']
  assert start in ran.splitlines(), ran


def test_two_tower_retrain_reuses_the_homes_model_and_warm_starts(two_tower,
                                                                 capsys):
  """Last in this module: it pushes version 2 into the shared home. Given
  no flags, retrain runs the module file and settings `run` recorded."""
  demo_interactions.write_examples(two_tower['data'], SHAPE, span=2)
  code, out, _ = _cli(capsys, 'retrain', '--data', two_tower['data'],
                      '--home', two_tower['home'])
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
  code, out, _ = _cli(capsys, 'pushed', '--home', two_tower['home'])
  lines = out.splitlines()
  assert ' eval span 2 ' in lines[1] and '(served)' in lines[1], out
  first = lines.index(next(l for l in lines if l.startswith('      1  ')))
  assert ' eval span 1 ' in lines[first], out
  assert lines[first + 2] == ("         metrics measured on eval span 1, the "
                              "served version's on eval span 2: not "
                              "comparable"), out
  code, out, _ = _cli(capsys, 'lineage', '--home', two_tower['home'])
  assert out.startswith('pushed version 2 <- trained on span(s) 2'), out
  assert '<- warm start: ' in out
