"""CheckpointValidator executor: real checkpoints, real exports, real verdicts.

Restore and health: what a checkpoint must hold and what a table must look
like to be blessed. Comparisons with a pushed baseline and the quality gates
are in test_executor_baseline.py.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from tfx.types import standard_artifacts

from tests.support import artifact_fixtures
from tests.support import validator_fixtures as vf
from tests.support.validator_runs import artifact as _artifact
from tests.support.validator_runs import failed_gates as _failed
from tests.support.validator_runs import run
from tests.support.validator_runs import write_model as _model
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.spec.embedding_spec import TableSpec


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
  return vf.write_corpus(str(tmp_path_factory.mktemp('corpus')))


def test_tpu_format_checkpoint_is_blessed_without_loading_slots(tmp_path,
                                                              corpus):
  tokens = corpus['vocab'].tokens
  spec = skipgram_spec(dim=8, optimizer='adam')
  model = _model(tmp_path, corpus, 'model', vf.topic_table(tokens, 0.1), spec)
  blessing, report = run(corpus, model, str(tmp_path / 'blessing'))
  assert report['blessed'], report['summary']
  assert blessing.get_int_custom_property('blessed') == 1
  assert blessing.get_string_custom_property('current_model') == model
  assert blessing.get_string_custom_property('baseline_model') == ''
  assert os.path.exists(tmp_path / 'blessing' / 'BLESSED')
  assert not os.path.exists(tmp_path / 'blessing' / 'NOT_BLESSED')
  assert os.path.exists(tmp_path / 'blessing' / 'report.html')
  cand = report['metrics']['candidate']
  chance = 10 / (len(tokens) - 1)  # k = 10 of the other tokens at random
  assert cand['recall_at_k'] > 3 * chance
  assert cand['related_recall_at_k'] > 3 * chance
  # optimizer=None: the only restored variable is the table; adam's two slots
  # (momenta, velocities) stay in the checkpoint.
  restore = report['restore']
  table_bytes = len(tokens) * 8 * 4
  assert [v['shape'] for v in restore['restored_variables']] == [
      [len(tokens), 8]]
  assert restore['restored_bytes'] == table_bytes
  assert restore['checkpoint_table_bytes'] == table_bytes
  assert restore['checkpoint_slot_bytes_not_loaded'] == 2 * table_bytes
  keys = dict(tf.train.list_variables(restore['checkpoint']))
  assert model_layout.slot_key('tokens', 'momenta') in keys
  # The report: skip-gram's references as labelled columns, the neighbours
  # of its table, its recall by frequency.
  assert report['references'] == {
      'frequency': 'frequency-only model', 'popularity': 'popularity ranking',
      'untrained': 'untrained table'}
  assert set(report['inspection']['neighbours']) == {'tokens'}
  [section] = report['inspection']['sections']
  assert section['columns'] == ['target frequency', 'pairs', 'candidate',
                                'popularity']
  html = (tmp_path / 'blessing' / 'report.html').read_text()
  for column in ('candidate', 'frequency-only model', 'popularity ranking',
                 'untrained table'):
    assert f'<th>{column}</th>' in html
  assert '<th>baseline</th>' not in html  # nothing pushed: no column
  assert 'Nearest neighbours in table <code>tokens</code>' in html


def _edit_spec(model, **table_changes):
  spec = EmbeddingSpec.load(model)
  tables = tuple(
      TableSpec(**dict(t.__dict__, **table_changes)) for t in spec.tables)
  EmbeddingSpec(tables, spec.features, spec.optimizer).save(model)


def test_missing_table_is_not_blessed_with_the_table_and_shapes(tmp_path,
                                                              corpus):
  model = _model(tmp_path, corpus, 'model')
  spec = EmbeddingSpec.load(model)
  extra = TableSpec(name='items', dim=4, vocabulary_size=7)
  EmbeddingSpec(spec.tables + (extra,), spec.features,
                spec.optimizer).save(model)
  blessing, report = run(corpus, model, str(tmp_path / 'b'))
  assert blessing.get_int_custom_property('blessed') == 0
  assert os.path.exists(tmp_path / 'b' / 'NOT_BLESSED')
  reason = _failed(report)['restore']
  assert "table 'items' (shape [7, 4]) is missing" in reason
  assert report['metrics']['candidate'] is None


def test_wrong_shape_is_not_blessed_with_both_shapes(tmp_path, corpus):
  model = _model(tmp_path, corpus, 'model')
  _edit_spec(model, dim=16)
  n = len(corpus['vocab'])
  _, report = run(corpus, model, str(tmp_path / 'b'))
  assert not report['blessed']
  assert (f"table 'tokens' has shape [{n}, 8] but the spec says [{n}, 16]"
          in _failed(report)['restore'])


def test_truncated_checkpoint_is_not_blessed(tmp_path, corpus):
  model = _model(tmp_path, corpus, 'model')
  ckpt_dir = model_layout.checkpoint_dir(model)
  data = [f for f in os.listdir(ckpt_dir) if '.data-' in f][0]
  path = os.path.join(ckpt_dir, data)
  with open(path, 'r+b') as f:
    f.truncate(os.path.getsize(path) // 3)
  blessing, report = run(corpus, model, str(tmp_path / 'b'))
  assert blessing.get_int_custom_property('blessed') == 0
  assert 'CheckpointError' in _failed(report)['restore']
  assert model in _failed(report)['restore']


def test_nan_poisoned_table_is_not_blessed(tmp_path, corpus):
  table = vf.topic_table(corpus['vocab'].tokens, 0.1)
  table[3, 2] = np.nan
  table[10, :] = np.inf
  model = _model(tmp_path, corpus, 'model', table)
  blessing, report = run(corpus, model, str(tmp_path / 'b'))
  assert blessing.get_int_custom_property('blessed') == 0
  assert '9 NaN/Inf values in 2 rows' in _failed(report)[
      'health/tokens/finite']
  assert report['metrics']['candidate']['eval_loss'] is None
  html = (tmp_path / 'b' / 'report.html').read_text()
  assert 'NaN/Inf' in html


def test_collapsed_table_is_not_blessed(tmp_path, corpus):
  n = len(corpus['vocab'])
  rng = np.random.default_rng(0)
  table = (np.ones((n, 8)) + 0.01 * rng.normal(size=(n, 8))).astype(
      np.float32)
  model = _model(tmp_path, corpus, 'model', table)
  _, report = run(corpus, model, str(tmp_path / 'b'))
  assert not report['blessed']
  failed = _failed(report)
  assert 'collapsed' in failed['health/tokens/not_collapsed']
  assert report['health']['candidate']['tokens']['mean_pairwise_cosine'] > 0.99


def test_exploded_norms_are_not_blessed(tmp_path, corpus):
  table = vf.topic_table(corpus['vocab'].tokens, 0.1)
  table[0] *= 1e4
  model = _model(tmp_path, corpus, 'model', table)
  _, report = run(corpus, model, str(tmp_path / 'b'))
  assert 'exploded norms' in _failed(report)['health/tokens/norms']


def test_sparsecore_layout_restores_through_restore_info(tmp_path, corpus):
  """Rows shuffled across 4 SparseCores and padded, as SparseCore saves them."""
  tokens = corpus['vocab'].tokens
  want = vf.topic_table(tokens, 0.1)
  n_sc = 4
  rows = -(-len(tokens) // n_sc) * n_sc
  padded = np.zeros((rows, 8), np.float32)
  padded[:len(tokens)] = want
  stored = padded.reshape(rows // n_sc, n_sc, 8).transpose(1, 0, 2).reshape(
      rows, 8)
  model = str(tmp_path / 'model')
  pad_tokens = list(tokens) + [f'pad{i}' for i in range(rows - len(tokens))]
  artifact_fixtures.write_tpu_format_model(model, pad_tokens, table=stored)
  _edit_spec(model, vocabulary_size=len(tokens))
  artifact_fixtures.write_vocabulary(model, dict(zip(
      tokens, corpus['vocab'].counts)))
  info = json.dumps({'num_tpu_devices': 2, 'num_sc_chips_per_tpu': 2})
  _, report = run(corpus, model, str(tmp_path / 'b'),
                  sparsecore_restore_info=info)
  assert report['blessed'], report['summary']
  _, plain = run(corpus, model, str(tmp_path / 'b2'))
  assert not plain['blessed']
  assert 'has shape' in _failed(plain)['restore']
  # The unshuffled table scores exactly like the original rows.
  direct = str(tmp_path / 'direct')
  artifact_fixtures.write_tpu_format_model(direct, tokens, table=want,
                                           counts=corpus['vocab'].counts)
  _, ref = run(corpus, direct, str(tmp_path / 'b3'))
  assert report['metrics']['candidate'] == ref['metrics']['candidate']


def test_bad_parameters_and_inputs_raise_one_line_errors(tmp_path, corpus):
  model = _model(tmp_path, corpus, 'model')
  out = str(tmp_path / 'b')
  with pytest.raises(ValueError, match='sparsecore_restore_info is not valid'):
    run(corpus, model, out, sparsecore_restore_info='{oops')
  with pytest.raises(ValueError, match="needs a positive integer 'num_tpu_"):
    run(corpus, model, out, sparsecore_restore_info='{}')
  with pytest.raises(ValueError, match='parameter k must be an integer >= 1'):
    run(corpus, model, out, k=0)
  with pytest.raises(FileNotFoundError, match='nope.tsv does not exist'):
    run(corpus, model, out, related_pairs_file=str(tmp_path / 'nope.tsv'))
  no_eval = str(tmp_path / 'examples')
  shutil.copytree(os.path.join(corpus['examples'], 'Split-train'),
                  os.path.join(no_eval, 'Split-train'))
  with pytest.raises(FileNotFoundError, match="no files for split 'eval'"):
    run(dict(corpus, examples=no_eval), model, out)
  assert not os.listdir(out)  # nothing half-written


@pytest.mark.slow
def test_cpu_trainer_checkpoint_validates(tmp_path, corpus):
  from components.trainer import executor as trainer
  examples = _artifact(standard_artifacts.Examples, corpus['examples'])
  model = str(tmp_path / 'trained')
  config = trainer.TrainerConfig(
      embedding_spec=skipgram_spec(dim=8, learning_rate=1.0).to_json(),
      batch_size=256, epochs=3, window=3, negatives=4, subsample=0.0)
  meta = trainer.train(trainer.TrainerArgs([examples], corpus['vocabulary'],
                                           model, str(tmp_path / 'run')),
                       config)
  assert meta['device'] == 'cpu'
  blessing, report = run(corpus, model, str(tmp_path / 'b'))
  assert report['blessed'], report['summary']
  # Scored with the trainer's own skip-gram definition from metadata.json.
  assert report['parameters']['window'] == 3
  assert report['parameters']['num_negatives'] == 4
  assert report['parameters']['subsample'] == 0.0
  chance = 10 / (len(corpus['vocab']) - 1)
  assert report['metrics']['candidate']['recall_at_k'] > 2 * chance
  assert report['metrics']['candidate']['related_recall_at_k'] > 3 * chance
  # Adagrad's accumulators are in the checkpoint but were not restored.
  n = len(corpus['vocab'])
  assert report['restore']['restored_bytes'] == n * 8 * 4
  assert report['restore']['checkpoint_slot_bytes_not_loaded'] == n * 8 * 4
