"""The rating example's whole lifecycle on integer ids: `run` on span 1,
`retrain` on a new pre-split span 2 with no flags (the home remembers the
module; span 2's ratings are integers, an int64 label), `rollback` to
version 1, and the served version consumed through `saved_model_cli run`,
`hub.load`, `hub.KerasLayer` and the TF1 `hub.Module` train graph."""

import csv
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from pipelines import demo_ratings
from pipelines.cli.main import main
from tests.support import cli_runs
from tests.support import module_clients
from tests.support import paths
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout

pytestmark = pytest.mark.slow

MODULE_FILE = os.path.join(paths.REPO, 'examples', 'rating',
                           'rating_model.py')
SHAPE = demo_ratings.Shape(users=80, items=60, ratings=3000)
FLAGS = ['--module-file', MODULE_FILE, '--set', 'example_gen.format="csv"',
         '--set', 'batch_size=128', '--set', 'epochs=3',
         '--set', 'regression_margin=0.5']


_cli = cli_runs.run


def _eval_rows(data, span):
  """{user_id, item_id: [N] decimal strings, rating: [N] floats} of a
  span's eval CSV."""
  with open(os.path.join(data, f'span-{span}', 'eval', 'part-00000.csv'),
            encoding='utf-8', newline='') as f:
    rows = list(csv.DictReader(f))
  return {'user_id': np.array([r['user_id'] for r in rows], dtype=object),
          'item_id': np.array([r['item_id'] for r in rows], dtype=object),
          'rating': np.array([float(r['rating']) for r in rows], np.float32)}


def _integer_ratings(path):
  """Rewrites a ratings CSV with "4" for "4.0": CsvExampleGen then makes
  the rating column int64, as MovieLens's integer stars come."""
  with open(path, encoding='utf-8', newline='') as f:
    rows = list(csv.reader(f))
  with open(path, 'w', encoding='utf-8', newline='') as f:
    csv.writer(f).writerows(
        rows[:1] + [[u, i, str(int(float(r)))] for u, i, r in rows[1:]])


@pytest.fixture(scope='module')
def lifecycle(tmp_path_factory):
  root = tmp_path_factory.mktemp('rating')
  data, home = str(root / 'data'), str(root / 'home')
  demo_ratings.write_examples(data, SHAPE, span=1)
  ran = _cli('run', '--data', data, '--home', home, *FLAGS)
  assert ran[0] == 0, ran[1][-3000:]
  written = demo_ratings.write_examples(
      data, demo_ratings.Shape(users=80, items=60, ratings=3000, seed=1),
      span=2)
  for path in written.values():
    _integer_ratings(path)
  retrained = _cli('retrain', '--data', data, '--home', home)
  assert retrained[0] == 0, retrained[1][-3000:]
  rolled = _cli('rollback', '--home', home, '--to', '1')
  assert rolled[0] == 0, rolled[1]
  push_root = str(root / 'home' / 'pushed')
  return {'data': data, 'home': home, 'push_root': push_root, 'ran': ran[1],
          'retrained': retrained[1], 'rolled': rolled[1],
          'serving': lambda v: push_layout.version_dir(push_root, 'serving',
                                                       v),
          'hub': push_layout.version_dir(push_root, 'hub', 3)}


def _predict(serving_dir, rows):
  loaded = tf.saved_model.load(serving_dir)
  return loaded.signatures['serving_default'](
      user_id=tf.constant(rows['user_id'].tolist()),
      item_id=tf.constant(rows['item_id'].tolist()))['rating'].numpy()


def test_run_trains_on_integer_ids_and_pushes(lifecycle):
  assert 'validation: BLESSED\npushed: version 1\n' in lifecycle['ran']
  source = home_paths.resolve(push_layout.read_manifest(
      lifecycle['push_root'], 'serving', 1)['source_model'],
                              lifecycle['push_root'])
  kinds = model_layout.read_metadata(source)['feature_kinds']
  assert kinds == {'user_id': 'int64', 'item_id': 'int64'}


def test_the_pushed_model_scores_the_rmse_its_validation_measured(
    lifecycle):
  validated = float(re.search(r'candidate metrics: .*rmse=([\d.]+)',
                              lifecycle['ran']).group(1))
  untrained = float(re.search(r'untrained metrics: .*rmse=([\d.]+)',
                              lifecycle['ran']).group(1))
  rows = _eval_rows(lifecycle['data'], 1)
  predicted = _predict(lifecycle['serving'](1), rows)
  rmse = float(np.sqrt(np.mean((predicted - rows['rating']) ** 2)))
  assert abs(rmse - validated) < 1e-3, (rmse, validated)
  assert rmse < untrained


def test_retrain_reuses_the_homes_module_on_the_new_span(lifecycle):
  out = lifecycle['retrained']
  assert out.startswith('retrain: reusing what the home records: module '
                        f'file {MODULE_FILE}, example_gen.format="csv"'), out
  # Blessed, possibly worse than version 1 within the margin (then said).
  assert re.search(r'^validation: BLESSED(, but worse than .*)?\npushed: '
                   r'version 2$', out, re.M), out
  assert 'warm start: tables item_id, user_id from ' in out, out


def test_rollback_serves_version_one_again(lifecycle):
  assert lifecycle['rolled'].startswith(
      'version 1 re-published as version 3 (now served)')
  rows = _eval_rows(lifecycle['data'], 2)
  first, second, served = (_predict(lifecycle['serving'](v), rows)
                           for v in (1, 2, 3))
  np.testing.assert_array_equal(served, first)
  assert np.abs(served - second).max() > 1e-3


def test_saved_model_cli_and_integer_ids_answer_as_serving_default(
    lifecycle):
  serving_dir = lifecycle['serving'](3)
  rows = _eval_rows(lifecycle['data'], 1)
  ids = {k: rows[k][:4] for k in ('user_id', 'item_id')}
  want = _predict(serving_dir, ids)
  got = module_clients.cli_run(serving_dir, 'serving_default', ids)
  np.testing.assert_allclose(got, want, atol=1e-5)
  numbers = {k: v.astype(np.int64) for k, v in ids.items()}
  session = module_clients.session_answers(serving_dir, 'integer_ids',
                                           numbers)
  np.testing.assert_allclose(session['rating'], want, atol=1e-5)
  assert 1.0 < want.mean() < 5.0


def test_embed_prints_each_rows_predicted_rating(lifecycle, capsys):
  rows = _eval_rows(lifecycle['data'], 1)
  ids = {k: rows[k][:2] for k in ('user_id', 'item_id')}
  want = _predict(lifecycle['serving'](3), ids)
  argv = [f'--input={k}={v}' for k in ids for v in ids[k]]
  assert main(['embed', '--home', lifecycle['home'], *argv]) == 0
  lines = capsys.readouterr().out.splitlines()
  assert [l.split('\t')[:2] for l in lines] == [
      [ids['item_id'][i], ids['user_id'][i]] for i in range(2)]
  np.testing.assert_allclose([float(l.split('\t')[2]) for l in lines], want,
                             atol=1e-5)


def test_hub_load_and_keras_layer_of_the_served_export(lifecycle):
  import tensorflow_hub as hub
  serving_dir = lifecycle['serving'](3)
  rows = _eval_rows(lifecycle['data'], 1)
  ids = {k: rows[k][:8] for k in ('user_id', 'item_id')}
  want = _predict(serving_dir, ids)
  loaded = hub.load(serving_dir)
  got = loaded({k: tf.constant(v.tolist()) for k, v in ids.items()})
  np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
  before, after, _ = module_clients.fit_keras_layer(serving_dir, ids)
  assert any(not np.array_equal(b, a) for b, a in zip(before, after))


def test_the_tf1_hub_module_fine_tunes_in_a_train_graph(lifecycle):
  rows = _eval_rows(lifecycle['data'], 1)
  ids = {k: rows[k][:8] for k in ('user_id', 'item_id')}
  before, after, _, _ = module_clients.fine_tune_hub_module(
      lifecycle['hub'], ids)
  moved = {n for n in before if not np.array_equal(before[n], after[n])}
  assert any('global_mean' in n for n in moved), moved
  assert any(n.endswith('/user_id:0') for n in moved), moved
