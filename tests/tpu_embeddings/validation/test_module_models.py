"""Validating a module file's model (the two-tower example) through the one
validation path: restore, health, metrics, gates, report."""

import os
import re
import shutil

import pytest
import tensorflow as tf

from components import module_file
from tests.support import artifact_fixtures as fx
from tests.support import interaction_fixtures as ix
from tests.support import validator_fixtures
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.exports import export
from tpu_embeddings.models import model_restore
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.validation import validate
from tpu_embeddings.validation.config import ValidatorConfig

pytestmark = pytest.mark.slow
CONFIG = ValidatorConfig(max_eval_examples=5000)


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('two-tower'))
  ix.train(root, train_steps=0, epochs=2)
  return root


def _validate(root, model='model', push_root=''):
  uri = os.path.join(root, model)
  return validate.validate(uri, os.path.join(root, 'examples'), CONFIG,
                           module_file.from_model(uri), push_root).report


def _edited_copy(root, name, edit, with_model=True):
  """A copy of the trained Model whose newest checkpoint is `edit`ed."""
  copy = os.path.join(root, name)
  shutil.copytree(os.path.join(root, 'model'), copy)
  restored = model_restore.restore(copy, module_file.from_model(copy))
  restored.serving_model(restored.write_vocabularies(
      os.path.join(root, name + '-vocabularies')))
  edit(restored)
  objects = {model_layout.EMBEDDING_KEY: restored.embedding}
  if with_model:
    objects[model_layout.MODEL_KEY] = restored.model
  tf.train.CheckpointManager(
      tf.train.Checkpoint(**objects), model_layout.checkpoint_dir(copy),
      max_to_keep=5).save(checkpoint_number=10**6)
  return name


def _gate(report, name):
  return next(g for g in report['gates'] if g['name'] == name)


def test_a_trained_model_is_blessed_and_beats_an_untrained_one(trained):
  report = _validate(trained)
  assert report['blessed'], report['summary']
  candidate = report['metrics']['candidate']['recall_at_10']
  untrained = report['metrics']['untrained']['recall_at_10']
  assert candidate > untrained
  assert _gate(report, 'untrained/recall_at_10')['passed']
  assert _gate(report, 'health/dense/finite')['passed']
  assert set(report['health']['candidate']) == {'user', 'item', 'category'}


def test_a_model_that_learned_nothing_is_refused_by_the_floor(trained):
  def zero_last_layer(restored):
    # Every query vector zero: every candidate ties, which counts against.
    last = restored.model.query_tower.layers[-1]
    for v in (last.kernel, last.bias):
      v.assign(tf.zeros_like(v))
  report = _validate(trained, _edited_copy(trained, 'dead', zero_last_layer))
  assert not report['blessed']
  gate = _gate(report, 'untrained/recall_at_10')
  assert not gate['passed'] and 'no better than untrained' in gate['reason']
  assert _gate(report, 'health/dense/finite')['passed']


def test_a_nan_in_the_dense_model_is_refused(trained):
  def poison(restored):
    kernel = restored.model.variables[0]
    kernel.assign(tf.fill(kernel.shape, float('nan')))
  report = _validate(trained, _edited_copy(trained, 'nan', poison))
  gate = _gate(report, 'health/dense/finite')
  assert not gate['passed'] and 'NaN/Inf' in gate['reason']
  assert not report['blessed']


def test_a_checkpoint_without_the_dense_model_fails_the_restore(trained):
  report = _validate(trained, _edited_copy(trained, 'tables-only',
                                           lambda r: None, with_model=False))
  assert not report['blessed']
  gate = _gate(report, 'restore')
  assert not gate['passed'] and 'does not hold' in gate['reason'], gate


def test_the_pushed_baseline_is_scored_through_what_it_serves(trained):
  push_root = os.path.join(trained, 'pushed')
  uri = os.path.join(trained, 'model')
  exported = os.path.join(trained, 'exported')
  sources = export.export_model(
      uri, {kind: os.path.join(exported, kind) for kind in ('serving', 'hub')},
      module_file.from_model(uri))
  dirs = {}
  for kind, source in sources.items():
    dirs[kind] = push_layout.version_dir(push_root, kind, 1)
    shutil.copytree(source, dirs[kind])
  validator_fixtures.write_manifests(dirs, 1, uri)
  report = _validate(trained, push_root=push_root)
  assert report['baseline_version'] == 1, report['baseline_unreadable']
  assert report['metrics']['baseline'] == report['metrics']['candidate']
  assert _gate(report, 'baseline/recall_at_10')['passed']
  # Its tables as its export holds them: the same neighbours.
  items = [q for bucket in report['inspection']['neighbours']['item'].values()
           for q in bucket]
  assert items and all(q['baseline'] == q['candidate'] for q in items)
  assert set(report['health']['baseline']) == {'user', 'item', 'category'}


def test_a_baseline_of_another_model_is_a_warning_not_a_gate(trained):
  push_root = os.path.join(trained, 'pushed-skipgram')
  skipgram = os.path.join(trained, 'skipgram')
  fx.write_tpu_format_model(skipgram, ['a', 'b', 'c', 'd'])
  validator_fixtures.push_baseline(push_root, skipgram)
  report = _validate(trained, push_root=push_root)
  assert report['metrics']['baseline'] is None
  assert any('eval_fn cannot score it' in w for w in report['warnings'])
  assert not [g for g in report['gates'] if g['name'].startswith('baseline/')]
  assert report['blessed']


def test_the_executor_reports_what_the_two_tower_model_declares(trained,
                                                                tmp_path):
  """Through the component: the metric table's columns are the models and
  references scored, labelled; the neighbours are those of its tables."""
  from tests.support import validator_runs
  corpus = {'examples': os.path.join(trained, 'examples'),
            'vocabulary': os.path.join(trained, 'vocabulary'), 'related': ''}
  out = str(tmp_path / 'blessing')
  _, report = validator_runs.run(corpus, os.path.join(trained, 'model'), out,
                                 max_eval_examples=5000)
  assert report['blessed'], report['summary']
  assert report['references'] == {'untrained': 'untrained model'}
  assert set(report['inspection']['neighbours']) == {'user', 'item',
                                                     'category'}
  items = [q for bucket in report['inspection']['neighbours']['item'].values()
           for q in bucket]
  assert items and all(q['candidate'] for q in items)
  page = open(os.path.join(out, 'report.html'), encoding='utf-8').read()
  metrics = page[page.index('<h2>Metrics</h2>'):]
  metrics = metrics[:metrics.index('</table>')]
  assert re.findall('<th>([^<]*)</th>', metrics) == [
      'metric', 'candidate', 'untrained model']
  assert re.search(r'<td>recall_at_10</td><td>[0-9.]+</td><td>[0-9.]+</td>',
                   metrics)
  for absent in ('frequency-only', 'popularity', 'eval_loss', 'spearman'):
    assert absent not in page
  assert "Nearest neighbours in table <code>item</code>" in page
  assert 'Row norms of table <code>' in page
