"""Training a module file's model: checkpoint layout, resume, warm start."""

import hashlib
import os

import numpy as np
import pytest
import tensorflow as tf

from components import module_file
from tests.support import interaction_fixtures as ix
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

pytestmark = pytest.mark.slow
KERNEL = ('model/query_tower/layer_with_weights-0/kernel/.ATTRIBUTES/'
          'VARIABLE_VALUE')


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('two-tower'))
  meta = ix.train(root, checkpoint_every=6, checkpoint_seconds=0)
  return root, meta


def _reader(model_uri, step=None):
  path = (model_layout.latest_checkpoint(model_uri) if step is None else
          os.path.join(model_layout.checkpoint_dir(model_uri), f'ckpt-{step}'))
  return tf.train.load_checkpoint(path)


def _changed_module(directory):
  """The example module with one more line: another SHA-256."""
  with open(ix.MODULE_FILE, encoding='utf-8') as f:
    source = f.read()
  path = os.path.join(directory, 'changed_two_tower.py')
  with open(path, 'w', encoding='utf-8') as f:
    f.write(source + '\n# changed\n')
  return module_file.from_exec_properties({'module_file': path})


def test_embedding_model_and_optimizer_are_saved_side_by_side(trained):
  root, meta = trained
  model = os.path.join(root, 'model')
  keys = set(_reader(model).get_variable_to_shape_map())
  for table in ('user', 'item', 'category'):
    assert model_layout.table_key(table) in keys
    assert model_layout.slot_key(table, 'accumulators') in keys
  assert KERNEL in keys
  assert any(k.startswith('model/candidate_tower/') for k in keys)
  assert any(k.startswith('dense_optimizer/') for k in keys)
  assert not any(k.startswith('model/embedding') for k in keys)
  with open(ix.MODULE_FILE, 'rb') as f:
    digest = hashlib.sha256(f.read()).hexdigest()
  assert meta['user_module_sha256'] == digest
  with open(os.path.join(model, 'user_module.py'), 'rb') as f:
    assert hashlib.sha256(f.read()).hexdigest() == digest
  spec = EmbeddingSpec.load(model)
  sizes = {t.name: (t.vocabulary, t.vocabulary_size) for t in spec.tables}
  found = vocabularies.read(model)
  assert sizes == {'user': ('user_id', len(found['user_id'])),
                   'item': ('item_id', len(found['item_id'])),
                   'category': ('item_category',
                                len(found['item_category']))}
  assert meta['steps'] == 12 and meta['dim'] == {
      'user': 32, 'item': 32, 'category': 8}


def test_a_rerun_continues_tables_dense_model_and_optimizer(trained,
                                                             tmp_path):
  root, _ = trained
  import shutil
  model = str(tmp_path / 'model')
  shutil.copytree(os.path.join(root, 'model'), model)
  before = _reader(model).get_tensor(KERNEL)
  meta = ix.train(root, name=os.path.relpath(model, root), train_steps=18,
                  continues=True)
  assert meta['resumed_from_step'] == 12 and meta['steps'] == 18
  assert not np.array_equal(_reader(model).get_tensor(KERNEL), before)


def test_a_rerun_with_another_module_file_is_refused(trained, tmp_path):
  root, _ = trained
  import shutil
  model = str(tmp_path / 'model')
  shutil.copytree(os.path.join(root, 'model'), model)
  with pytest.raises(ValueError, match='another module file'):
    ix.train(root, name=os.path.relpath(model, root), train_steps=18,
             module_object=_changed_module(str(tmp_path)))


def test_warm_start_restores_the_dense_model_of_the_same_module(trained):
  root, _ = trained
  base = os.path.join(root, 'model')
  meta = ix.train(root, name='warm', warm_start_uri=base, train_steps=2)
  assert meta['warm_start']['dense'].startswith('restored')
  assert meta['warm_start']['kept_tokens'] > 0
  start = _reader(os.path.join(root, 'warm'), step=0)
  np.testing.assert_array_equal(start.get_tensor(KERNEL),
                                _reader(base).get_tensor(KERNEL))
  np.testing.assert_array_equal(
      start.get_tensor(model_layout.table_key('item')),
      _reader(base).get_tensor(model_layout.table_key('item')))


def test_warm_start_from_another_module_keeps_tables_not_dense(trained,
                                                               tmp_path):
  root, _ = trained
  base = os.path.join(root, 'model')
  meta = ix.train(root, name='warm-other', warm_start_uri=base,
                  train_steps=2, module_object=_changed_module(str(tmp_path)))
  assert meta['warm_start']['dense'].startswith('initialized')
  start = _reader(os.path.join(root, 'warm-other'), step=0)
  assert not np.array_equal(start.get_tensor(KERNEL),
                            _reader(base).get_tensor(KERNEL))
  np.testing.assert_array_equal(
      start.get_tensor(model_layout.table_key('user')),
      _reader(base).get_tensor(model_layout.table_key('user')))


def test_a_feature_missing_from_the_examples_is_named(trained, tmp_path):
  root, _ = trained
  source = open(ix.MODULE_FILE, encoding='utf-8').read().replace(
      "'item_category': 'item_category'}",
      "'item_category': 'item_category', 'price': 'price'}")
  path = tmp_path / 'priced.py'
  path.write_text(source)
  module = module_file.from_exec_properties({'module_file': str(path)})
  with pytest.raises(ValueError, match="feature 'price'"):
    ix.train(root, name='priced', module_object=module)
  assert not os.path.exists(os.path.join(root, 'priced'))
