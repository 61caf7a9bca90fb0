"""CheckpointValidator executor: the quality gates and the pushed baseline.

Real checkpoints, real exports, real verdicts: a candidate against the pushed
baseline, the popularity ranking and absolute thresholds, and a damaged or
unhelpful baseline. Restore and health checks are in test_executor.py.
"""

import os

import pytest

from tests.support import artifact_fixtures
from tests.support import validator_fixtures as vf
from tests.support.validator_runs import failed_gates as _failed
from tests.support.validator_runs import run
from tests.support.validator_runs import write_model as _model
from tpu_embeddings.push_root import served


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
  return vf.write_corpus(str(tmp_path_factory.mktemp('corpus')))


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


@pytest.mark.slow
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
  # The verdict says which served version it compared with (the pusher
  # pushes only while that one is served).
  assert report['validated_against'] == served.identity(pushed['root'])
  assert report['validated_against']['version'] == 1
  # Without the baseline (and the popularity bar) it passes the absolute gates.
  _, alone = run(corpus, model, str(tmp_path / 'b2'), beat_popularity=False)
  assert alone['blessed'], alone['summary']
  assert alone['validated_against'] is None


def test_absolute_thresholds_gate_without_a_baseline(tmp_path, corpus):
  tokens = corpus['vocab'].tokens
  model = _model(tmp_path, corpus, 'model', vf.random_table(tokens, 0.8))
  _, report = run(corpus, model, str(tmp_path / 'b'), min_recall_at_k=0.5,
                  max_eval_loss=100.0, beat_popularity=False)
  failed = _failed(report)
  assert list(failed) == ['absolute/recall_at_k']


def test_table_that_learned_nothing_loses_to_the_popularity_ranking(tmp_path,
                                                                    corpus):
  """Tied vectors: the default quality gate is the popularity ranking's."""
  tokens = corpus['vocab'].tokens
  untrained = _model(tmp_path, corpus, 'untrained',
                     vf.random_table(tokens, 0.8))
  _, report = run(corpus, untrained, str(tmp_path / 'b'),
                  beat_frequency_model=True)
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
  _, blessed = run(corpus, good, str(tmp_path / 'b2'),
                   beat_frequency_model=True)
  assert blessed['blessed'], blessed['summary']
  assert blessed['metrics']['candidate']['recall_at_k'] > popular


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_candidate_worse_within_the_margin_is_blessed_saying_so(
    tmp_path, corpus, pushed):
  """Noisier than the pushed baseline, within a wide margin: blessed, and
  the verdict names each metric it is worse in, with both figures."""
  model = _model(tmp_path, corpus, 'model',
                 vf.topic_table(corpus['vocab'].tokens, 0.9, seed=5))
  blessing, report = run(corpus, model, str(tmp_path / 'b'), span=7,
                         push_root=pushed['root'], regression_margin=1.0)
  assert report['blessed'], report['summary']
  cand, base = report['metrics']['candidate'], report['metrics']['baseline']
  worse = [m for m in ('recall_at_k', 'related_recall_at_k')
           if cand[m] < base[m]] + (
               ['eval_loss'] if cand['eval_loss'] > base['eval_loss'] else [])
  assert 'recall_at_k' in worse, (cand, base)
  note = report['worse_than_baseline']
  assert note.startswith('worse than the served v1 in ')
  assert note.endswith(' (within the margin 1, validator.regression_margin)')
  for metric in worse:
    assert f'{metric}: {cand[metric]:.4g} against {base[metric]:.4g}' in note
  assert blessing.get_string_custom_property('blessing_message') == (
      f'blessed: all {len(report["gates"])} gates passed, but {note}')
  # On which data: the Examples' span, which the pusher records.
  assert report['eval_data']['span'] == 7
  _, unspanned = run(corpus, model, str(tmp_path / 'b2'))
  assert unspanned['eval_data']['span'] is None
