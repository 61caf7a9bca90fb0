"""The two-tower example on CSV whose id columns are integers: CsvExampleGen
infers int64 for `user_id` and `item_id` (a `history` of space-separated ids
stays a string column); the run trains, validates, exports and pushes, and
the pushed `examples` signature answers int64 tf.Examples as the default
signature answers the same ids written as decimal strings."""

import contextlib
import csv
import io
import os

import numpy as np
import pytest
import tensorflow as tf

from pipelines import demo_interactions
from pipelines.cli.main import main
from tests.support import interaction_fixtures
from tests.support import module_clients
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout

SHAPE = demo_interactions.Shape(items=300, categories=10, sequences=300,
                                min_length=10, max_length=30)
# Ids from 149 up: two varint bytes in a tf.Example, not UTF-8 text.
OFFSET = 149
FAST = ['--module-file', interaction_fixtures.MODULE_FILE,
        '--set', 'example_gen.format="csv"', '--set', 'batch_size=128',
        '--set', 'epochs=2', '--set', 'regression_margin=0.5']


def _number(token: str) -> str:
  """'u12' / 'i12' -> '161': the demo's id as an integer."""
  return str(int(token[1:]) + OFFSET)


def write_integer_ids(out_dir: str):
  """One span of the demo interactions, every id an integer."""
  for split, records in demo_interactions.rows(SHAPE).items():
    directory = os.path.join(out_dir, 'span-1', split)
    os.makedirs(directory)
    with open(os.path.join(directory, 'part-00000.csv'), 'w',
              newline='', encoding='utf-8') as f:
      writer = csv.DictWriter(f, fieldnames=demo_interactions.FEATURES)
      writer.writeheader()
      for r in records:
        writer.writerow({
            'user_id': _number(r['user_id']),
            'history': ' '.join(_number(t) for t in r['history'].split()),
            'item_id': _number(r['item_id']),
            'item_category': _number(r['item_category'])})


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  root = tmp_path_factory.mktemp('integer-ids')
  write_integer_ids(str(root / 'data'))
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    code = main(['run', '--data', str(root / 'data'), '--home',
                 str(root / 'home')] + FAST)
  assert code == 0, out.getvalue()[-2000:]
  push_root = str(root / 'home' / 'pushed')
  source = home_paths.resolve(push_layout.read_manifest(
      push_root, 'serving', 1)['source_model'], push_root)
  return {'out': out.getvalue(), 'source': source,
          'serving_dir': push_layout.version_dir(push_root, 'serving', 1),
          'hub_dir': push_layout.version_dir(push_root, 'hub', 1)}


def _example(user_id, history) -> bytes:
  return tf.train.Example(features=tf.train.Features(feature={
      'user_id': tf.train.Feature(int64_list=tf.train.Int64List(
          value=user_id)),
      'history': tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[h.encode('utf-8') for h in history]))})).SerializeToString()


@pytest.mark.slow
def test_integer_ids_train_and_push(pushed):
  assert 'pushed: version 1' in pushed['out'], pushed['out']
  kinds = model_layout.read_metadata(pushed['source'])['feature_kinds']
  assert (kinds['user_id'], kinds['item_id'], kinds['history']) == (
      'int64', 'int64', 'bytes')


@pytest.mark.slow
def test_examples_signature_takes_int64_examples(pushed):
  user, items = str(OFFSET), [str(OFFSET), str(OFFSET + 25)]
  unknown = str(OFFSET - 1)  # no id below OFFSET was written
  examples = np.array([_example([int(user)], items),
                       _example([int(unknown)], items)], dtype=object)
  session = module_clients.session_answers(
      pushed['serving_dir'], 'examples', {'examples': examples})
  cli = module_clients.cli_run(pushed['serving_dir'], 'examples',
                               {'examples': examples})
  np.testing.assert_allclose(cli, session['embedding'].ravel(), atol=1e-5)
  loaded = tf.saved_model.load(pushed['serving_dir'])
  default = loaded.signatures['serving_default'](
      user_id=tf.constant([user, unknown]),
      history=tf.constant([' '.join(items)] * 2))['embedding'].numpy()
  np.testing.assert_allclose(session['embedding'], default, atol=1e-5)
  # A known id is looked up: its answer is not the unknown id's.
  assert np.abs(default[0] - default[1]).max() > 1e-3
