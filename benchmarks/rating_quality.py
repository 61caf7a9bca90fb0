"""Held-out RMSE: the rating example against what a user tries first.

    python -m benchmarks.rating_quality [--ratings ml-100k/u.data]
        [--split time|random]

Ratings are MovieLens's `u.data` rows (user, item, rating, timestamp,
tab-separated) from `--ratings`, or generated ones
(`pipelines.demo_ratings`); the last 10% in time are held out (`--split
random`: a random 10%, seed 0, the usual MovieLens protocol, in which most
held-out users were seen in training). Every row below is scored on the
same held-out ratings:

* global mean: the mean training rating.
* user + item biases: mean + b_user + b_item, fitted by alternating
  regularised least squares (ALS_PASSES passes, each bias shrunk towards 0
  by lambda), twice: with the lambda of LAMBDAS that does best on a split of
  the training ratings made as the held-out one is (what a user can do),
  and with the best on the held-out ratings themselves (a choice in the
  baseline's favour).
* plain Keras: the example's architecture, loss, initialisation, batch,
  epochs and optimizers (Adagrad on the rows, Adam on the mean) in a plain
  TF2 loop on one machine; an id unseen in training has a zero row.
* the pipeline: `run --module-file examples/rating/rating_model.py` on the
  same split written as CSV (one pre-split span, integer ids), the module's
  SETTINGS; scored through the pushed serving SavedModel's
  `serving_default`. Its validator's RMSE is printed beside it.
"""

import argparse
import importlib.util
import io
import os
import tempfile
import time
from typing import Dict

import numpy as np

from pipelines import demo_ratings

MODULE_FILE = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'examples', 'rating', 'rating_model.py')
EVAL_FRACTION = 0.1
ALS_PASSES = 10
LAMBDAS = (0.5, 1.0, 2.0, 5.0, 10.0, 25.0)


def read_ratings(path: str) -> np.ndarray:
  """[N, 4] int64 (user, item, rating, timestamp) of a u.data-style file."""
  rows = np.loadtxt(path, dtype=np.int64, delimiter='\t', ndmin=2)
  if rows.shape[1] != 4:
    raise ValueError(f'{path}: expected 4 tab-separated columns (user item '
                     f'rating timestamp), found {rows.shape[1]}')
  return rows


def rmse(predicted, actual) -> float:
  return float(np.sqrt(np.mean((np.asarray(predicted) - actual) ** 2)))


def biases(train: np.ndarray, lam: float):
  """(mean, {user: b}, {item: b}) by ALS_PASSES of regularised ALS."""
  mu = train[:, 2].mean()
  users, u = np.unique(train[:, 0], return_inverse=True)
  items, i = np.unique(train[:, 1], return_inverse=True)
  bu, bi = np.zeros(len(users)), np.zeros(len(items))
  r = train[:, 2] - mu
  for _ in range(ALS_PASSES):
    bi = (np.bincount(i, r - bu[u], len(items)) /
          (lam + np.bincount(i, minlength=len(items))))
    bu = (np.bincount(u, r - bi[i], len(users)) /
          (lam + np.bincount(u, minlength=len(users))))
  return mu, dict(zip(users, bu)), dict(zip(items, bi))


def bias_predictions(train, held, lam) -> np.ndarray:
  mu, bu, bi = biases(train, lam)
  return np.array([mu + bu.get(u, 0.0) + bi.get(i, 0.0)
                   for u, i in held[:, :2]])


def _rows(column: np.ndarray, known: np.ndarray) -> np.ndarray:
  """Row of each id among `known` (sorted), len(known) when unseen."""
  at = np.clip(np.searchsorted(known, column), 0, len(known) - 1)
  return np.where(known[at] == column, at, len(known))


def keras_predictions(train, held, module, seed: int = 0) -> np.ndarray:
  """The module's model and loss, trained in a plain TF2 loop."""
  import tensorflow as tf
  tf.keras.utils.set_random_seed(seed)
  settings, width = module.SETTINGS, module.DIM + 1
  known = [np.unique(train[:, c]) for c in (0, 1)]
  scale = 0.5 / width  # the spec's uniform initializer
  tables = [tf.Variable(tf.random.uniform([len(k) + 1, width], -scale,
                                          scale)) for k in known]
  mean = tf.Variable(module.MEAN_START)
  rows_optimizer = tf.keras.optimizers.Adagrad(
      0.1, initial_accumulator_value=1e-3)
  mean_optimizer = tf.keras.optimizers.Adam(0.01)

  def lookup(ids):  # an unseen id's row is zero, as in the pipeline
    out = []
    for table, k, column in zip(tables, known, ids):
      row = tf.gather(table, column)
      out.append(row * tf.cast(column < len(k), tf.float32)[:, None])
    return out

  def predict(ids):
    (user, bu), (item, bi) = [(a[:, :-1], a[:, -1]) for a in lookup(ids)]
    return mean + bu + bi + tf.reduce_sum(user * item, -1), lookup(ids)

  @tf.function
  def step(ids, label):
    with tf.GradientTape() as tape:
      predicted, rows = predict(ids)
      l2 = sum(tf.reduce_sum(tf.square(r), -1) for r in rows)
      loss = tf.reduce_mean(tf.square(predicted - label) + module.L2 * l2)
    grads = tape.gradient(loss, tables + [mean])
    rows_optimizer.apply_gradients(zip(grads[:2], tables))
    mean_optimizer.apply_gradients([(grads[2], mean)])

  ids = [_rows(train[:, c], known[c]) for c in (0, 1)]
  data = tf.data.Dataset.from_tensor_slices(
      ((ids[0], ids[1]), train[:, 2].astype(np.float32)))
  batch = settings['trainer.batch_size']
  for (u, i), label in data.shuffle(len(train), seed=seed).repeat(
      settings['trainer.epochs']).batch(batch, drop_remainder=True):
    step((u, i), label)
  held_ids = [_rows(held[:, c], known[c]) for c in (0, 1)]
  return predict(held_ids)[0].numpy()


def pipeline_predictions(work: str, split, held) -> Dict:
  """The whole local pipeline on the split; its pushed model's
  predictions."""
  import tensorflow as tf

  from pipelines import model_settings
  from pipelines.local import home as home_lib
  from pipelines.local import runner
  from tpu_embeddings.push_root import layout as push_layout
  data, home = os.path.join(work, 'data'), os.path.join(work, 'home')
  for name, rows in split.items():
    os.makedirs(os.path.join(data, 'span-1', name))
    demo_ratings.write_csv(os.path.join(data, 'span-1', name,
                                        'part-00000.csv'), rows)
  config = model_settings.with_module_defaults(
      {'example_gen.format': 'csv'}, MODULE_FILE)
  summary = runner.run(data, home, config, out=io.StringIO(),
                       module_file=MODULE_FILE)
  found = {'blessed': summary.get('blessed'), 'predicted': None,
           'validator': ((summary.get('metrics') or {}).get('candidate')
                         or {}).get('rmse')}
  if summary.get('pushed_version') is not None:
    loaded = tf.saved_model.load(push_layout.version_dir(
        home_lib.push_root(home), 'serving', summary['pushed_version']))
    predicted = loaded.signatures['serving_default'](
        user_id=tf.constant([str(u) for u in held[:, 0]]),
        item_id=tf.constant([str(i) for i in held[:, 1]]))['rating']
    found['predicted'] = predicted.numpy()
  return found


def _example_module():
  """The example's module file, imported (its constants, for Keras)."""
  spec = importlib.util.spec_from_file_location('rating_model', MODULE_FILE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _timed(fn, *args):
  start = time.perf_counter()
  return fn(*args), time.perf_counter() - start


def _cell(x, spec='.4f'):
  return '-' if x is None else format(x, spec)


def print_table(table, held, seen):
  """RMSE of each row's predictions, overall and on the held-out ratings
  of users seen in training (the others get no user row anywhere)."""
  print(f'{seen.mean():.1%} of held-out ratings are by users seen in '
        'training')
  print(f'\n{"run":<56} {"RMSE":>7} {"vs biases":>9} {"seen users":>10} '
        f'{"blessed":>7} {"seconds":>8}')
  bias = rmse(table[1][1], held[:, 2])
  for name, predicted, blessed, seconds in table:
    value = seen_value = None
    if predicted is not None:
      value = rmse(predicted, held[:, 2])
      seen_value = rmse(predicted[seen], held[seen, 2])
    gain = None if value is None else value - bias
    print(f'{name:<56} {_cell(value):>7} {_cell(gain, "+.4f"):>9} '
          f'{_cell(seen_value):>10} '
          f'{ {None: "-", True: "yes", False: "NO"}[blessed]:>7} '
          f'{_cell(seconds, ".1f"):>8}')


def split_rows(rows: np.ndarray, how: str, seed: int = 0
               ) -> Dict[str, np.ndarray]:
  """{'train', 'eval'}: the last EVAL_FRACTION in time, or ('random') a
  random EVAL_FRACTION of `rows`."""
  if how == 'time':
    return demo_ratings.time_split(rows, EVAL_FRACTION)
  order = np.random.default_rng(seed).permutation(len(rows))
  cut = int(round(len(rows) * (1 - EVAL_FRACTION)))
  return {'train': rows[order[:cut]], 'eval': rows[order[cut:]]}


def _bias_rows(train: np.ndarray, held: np.ndarray, how: str):
  """The two biases rows: lambda chosen on a split of `train`, and on
  `held`; and {lambda: held-out RMSE}."""
  inner = split_rows(train, how, seed=1)
  chosen = min(LAMBDAS, key=lambda lam: rmse(bias_predictions(
      inner['train'], inner['eval'], lam), inner['eval'][:, 2]))
  by_lambda = {lam: rmse(bias_predictions(train, held, lam), held[:, 2])
               for lam in LAMBDAS}
  best = min(by_lambda, key=by_lambda.get)
  return [(f'user + item biases (lambda {chosen:g}, chosen on training)',
           bias_predictions(train, held, chosen), None, None),
          (f'user + item biases (lambda {best:g}, best on held-out)',
           bias_predictions(train, held, best), None, None)], by_lambda


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--ratings', help='a u.data-style file (default: '
                      'generated ratings)')
  parser.add_argument('--users', type=int, default=demo_ratings.Shape.users)
  parser.add_argument('--items', type=int, default=demo_ratings.Shape.items)
  parser.add_argument('--count', type=int, default=demo_ratings.Shape.ratings,
                      help='generated ratings')
  parser.add_argument('--split', choices=('time', 'random'),
                      default='time', help='which ratings are held out')
  parser.add_argument('--work', help='keep the data and home here')
  args = parser.parse_args(argv)
  module = _example_module()
  rows = read_ratings(args.ratings) if args.ratings else (
      demo_ratings.ratings(demo_ratings.Shape(
          users=args.users, items=args.items, ratings=args.count)))
  split = split_rows(rows, args.split)
  train, held = split['train'], split['eval']
  print(f'{args.ratings or "generated ratings"}: {len(train):,} training, '
        f'{len(held):,} held-out ratings ({args.split} split, '
        f'{EVAL_FRACTION:.0%} held out); {os.cpu_count()} cores', flush=True)
  bias_rows, by_lambda = _bias_rows(train, held, args.split)
  table = [('global mean', np.full(len(held), train[:, 2].mean()), None,
            None)] + bias_rows
  keras, seconds = _timed(keras_predictions, train, held, module)
  table.append(('plain Keras, same model', keras, None, seconds))
  with tempfile.TemporaryDirectory() as tmp:
    found, seconds = _timed(pipeline_predictions, args.work or tmp, split,
                            held)
  table.append(('rating example (pipeline)', found['predicted'],
                found['blessed'], seconds))
  print_table(table, held, np.isin(held[:, 0], train[:, 0]))
  print(f'\nthe pipeline\'s validator RMSE {_cell(found["validator"])}; '
        'biases by lambda: ' + ', '.join(
            f'{lam:g} {v:.4f}' for lam, v in by_lambda.items()))


if __name__ == '__main__':
  main()
