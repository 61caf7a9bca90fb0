"""CheckpointValidator executor: real checkpoints, real exports, real verdicts."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from tfx.types import standard_artifacts

from components import artifact_types
from components import keys
from components.validator import executor
from tests.support import artifact_fixtures
from tests.support import validator_fixtures as vf
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.spec.embedding_spec import TableSpec


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
  return vf.write_corpus(str(tmp_path_factory.mktemp('corpus')))


def _artifact(cls, uri):
  a = cls()
  a.uri = uri
  return a


def run(corpus, model_uri, out_uri, **props):
  """Executor.Do with real artifacts; returns (blessing, report)."""
  examples = _artifact(standard_artifacts.Examples, corpus['examples'])
  examples.split_names = '["train", "eval"]'
  blessing = _artifact(standard_artifacts.ModelBlessing, out_uri)
  os.makedirs(out_uri, exist_ok=True)
  props.setdefault('related_pairs_file', corpus['related'])
  push_root = props.pop('push_root', '')
  executor.Executor().Do(
      {keys.MODEL: [_artifact(standard_artifacts.Model, model_uri)],
       keys.EXAMPLES: [examples],
       keys.VOCABULARY: [_artifact(artifact_types.Vocabulary,
                                           corpus['vocabulary'])]},
      {keys.BLESSING: [blessing]},
      {'config': json.dumps(props), 'push_root': push_root})
  with open(os.path.join(out_uri, 'report.json')) as f:
    return blessing, json.load(f)


def _model(tmp_path, corpus, name, table=None, spec=None):
  uri = str(tmp_path / name)
  artifact_fixtures.write_tpu_format_model(uri, corpus['vocab'].tokens,
                                           spec=spec, table=table)
  return uri


def _failed(report):
  return {g['name']: g['reason'] for g in report['gates'] if not g['passed']}


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


@pytest.fixture(scope='module')
def pushed(tmp_path_factory, corpus):
  """A pushed baseline of middling quality."""
  base = tmp_path_factory.mktemp('pushed')
  model = str(base / 'baseline_model')
  artifact_fixtures.write_tpu_format_model(
      model, corpus['vocab'].tokens,
      table=vf.topic_table(corpus['vocab'].tokens, 0.6, seed=5))
  root = str(base / 'root')
  serving = vf.push_baseline(root, model)
  return {'root': root, 'serving': serving}


def test_candidate_better_than_pushed_baseline_is_blessed(tmp_path, corpus,
                                                         pushed):
  model = _model(tmp_path, corpus, 'model',
                 vf.topic_table(corpus['vocab'].tokens, 0.1))
  blessing, report = run(corpus, model, str(tmp_path / 'b'),
                         push_root=pushed['root'], regression_margin=0.0)
  assert report['blessed'], report['summary']
  assert blessing.get_string_custom_property('baseline_model') == (
      pushed['serving'])
  cand, base = report['metrics']['candidate'], report['metrics']['baseline']
  assert cand['recall_at_k'] > base['recall_at_k']
  assert cand['eval_loss'] < base['eval_loss']
  names = {g['name'] for g in report['gates']}
  assert {'baseline/eval_loss', 'baseline/recall_at_k',
          'baseline/related_recall_at_k'} <= names
  html = (tmp_path / 'b' / 'report.html').read_text()
  assert 'class="bar-baseline"' in html and 'class="bar-candidate"' in html


def test_candidate_worse_than_baseline_beyond_margin_is_not_blessed(
    tmp_path, corpus, pushed):
  tokens = corpus['vocab'].tokens
  model = _model(tmp_path, corpus, 'model', vf.random_table(tokens, 0.8))
  blessing, report = run(corpus, model, str(tmp_path / 'b'),
                         push_root=pushed['root'], regression_margin=0.1)
  assert blessing.get_int_custom_property('blessed') == 0
  failed = _failed(report)
  assert 'baseline/recall_at_k' in failed
  assert 'vs baseline' in failed['baseline/recall_at_k']
  # Health is fine: only the comparison stops it.
  assert not any(name.startswith('health/') for name in failed)
  # Without the baseline (and the popularity bar) it passes the absolute gates.
  _, alone = run(corpus, model, str(tmp_path / 'b2'), beat_popularity=False)
  assert alone['blessed'], alone['summary']


def test_absolute_thresholds_gate_without_a_baseline(tmp_path, corpus):
  tokens = corpus['vocab'].tokens
  model = _model(tmp_path, corpus, 'model', vf.random_table(tokens, 0.8))
  _, report = run(corpus, model, str(tmp_path / 'b'), min_recall_at_k=0.5,
                  max_eval_loss=100.0, beat_popularity=False)
  failed = _failed(report)
  assert list(failed) == ['absolute/recall_at_k']


def test_table_that_learned_nothing_loses_to_the_popularity_ranking(tmp_path,
                                                                    corpus):
  tokens = corpus['vocab'].tokens
  untrained = _model(tmp_path, corpus, 'untrained',
                     vf.random_table(tokens, 0.8))
  _, report = run(corpus, untrained, str(tmp_path / 'b'))
  assert not report['blessed']
  assert list(_failed(report)) == ['popularity/recall_at_k']
  popular = report['metrics']['popularity']['recall_at_k']
  assert report['metrics']['candidate']['recall_at_k'] <= popular
  # Its loss is no better than a zero table's: said, but not a gate.
  untrained_loss = report['metrics']['untrained']['eval_loss']
  assert report['metrics']['candidate']['eval_loss'] >= untrained_loss
  assert any("not below an untrained table's" in w
             for w in report['warnings'])
  good = _model(tmp_path, corpus, 'good', vf.topic_table(tokens, 0.1))
  _, blessed = run(corpus, good, str(tmp_path / 'b2'))
  assert blessed['blessed'], blessed['summary']
  assert blessed['metrics']['candidate']['recall_at_k'] > popular


def test_baseline_knowing_little_of_the_eval_vocabulary_is_flagged(
    tmp_path, corpus):
  tokens = corpus['vocab'].tokens
  few = list(tokens[:3])
  base_model = str(tmp_path / 'small_baseline')
  artifact_fixtures.write_tpu_format_model(
      base_model, few, table=vf.topic_table(few, 0.1))
  root = str(tmp_path / 'root')
  vf.push_baseline(root, base_model)
  model = _model(tmp_path, corpus, 'model', vf.topic_table(tokens, 0.1))
  _, report = run(corpus, model, str(tmp_path / 'b'), push_root=root)
  coverage = report['metrics']['baseline']['eval_vocabulary_coverage']
  assert coverage < 0.1
  assert [w for w in report['warnings'] if 'knows only' in w] == [
      f'baseline version 1 knows only {coverage:.1%} of the evaluation '
      'vocabulary (min_baseline_coverage 0.5): comparing with it says little']


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
  artifact_fixtures.write_tpu_format_model(direct, tokens, table=want)
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


def test_cpu_trainer_checkpoint_validates(tmp_path, corpus):
  from components.trainer import executor as trainer  # pylint: disable=g-import-not-at-top
  examples = _artifact(standard_artifacts.Examples, corpus['examples'])
  model = str(tmp_path / 'trained')
  config = trainer.TrainerConfig(
      embedding_spec=skipgram_spec(dim=8, learning_rate=1.0).to_json(),
      batch_size=256, epochs=3, window=3, negatives=4, subsample=0.0)
  meta = trainer.train(trainer.TrainerArgs([examples], corpus['vocabulary'], model, str(tmp_path / 'run')), config)
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


@pytest.mark.parametrize('how', ['truncate', 'flip'])
def test_damaged_pushed_baseline_is_reported_and_passed_over(tmp_path, corpus,
                                                            how):
  """A damaged served version must not block validation (and every push)."""
  tokens = corpus['vocab'].tokens
  root = str(tmp_path / 'root')
  for version, noise in ((1, 0.6), (2, 0.5)):
    model = str(tmp_path / f'pushed{version}')
    artifact_fixtures.write_tpu_format_model(
        model, tokens, table=vf.topic_table(tokens, noise, seed=version))
    vf.publish_baseline(root, model, str(tmp_path / f'staging{version}'))
  data = vf.data_file(os.path.join(root, 'serving', '2'))
  if how == 'truncate':
    os.truncate(data, 1000)
  else:
    vf.flip_bytes(data)
  model = _model(tmp_path, corpus, 'model', vf.topic_table(tokens, 0.1))
  blessing, report = run(corpus, model, str(tmp_path / 'b'), push_root=root,
                         regression_margin=0.0)
  assert report['blessed'], report['summary']
  assert report['baseline_version'] == 1
  assert blessing.get_string_custom_property('baseline_model') == (
      os.path.join(root, 'serving', '1'))
  [unreadable] = report['baseline_unreadable']
  assert unreadable['version'] == 2
  assert 'serving/2/variables/variables.data-00000-of-00001' in (
      unreadable['error'])
  html = (tmp_path / 'b' / 'report.html').read_text()
  assert 'class="unreadable-baseline"' in html
  assert 'compared against version 1, the newest readable one' in html

  # Nothing readable left: absolute thresholds only, still no crash.
  os.truncate(vf.data_file(os.path.join(root, 'serving', '1')), 10)
  _, alone = run(corpus, model, str(tmp_path / 'b2'), push_root=root)
  assert alone['blessed'] and alone['baseline_version'] is None
  assert [u['version'] for u in alone['baseline_unreadable']] == [2, 1]
  assert alone['metrics']['baseline'] is None
