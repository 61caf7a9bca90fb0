"""The run summary warns about damaged pushed versions that were passed over."""

import numpy as np

from components.validator import report as report_lib
from pipelines.local import runner as local_runner


def _summary(tmp_path, report, training=None):
  report_lib.write(str(tmp_path), dict(
      {'blessed': True, 'summary': 'blessed', 'current_model': '/m',
       'gates': [], 'metrics': {'candidate': None, 'baseline': None}},
      **report), np.ones(3))
  return {'paths': {'metadata': '/h/metadata.sqlite'}, 'blessed': True,
          'report': str(tmp_path / report_lib.REPORT_HTML),
          'training': training or {}}


def test_unreadable_baseline_and_skipped_warm_start_are_warned(tmp_path):
  summary = _summary(tmp_path, {
      'baseline_version': None, 'baseline_model': '',
      'baseline_unreadable': [{'version': 1, 'path': '/p/serving/1',
                               'error': 'serving/1/x is missing'}]},
      training={'steps': 5, 'warm_start_skipped': [
          'pushed version 1: /m/1 checkpoint is damaged; cold start']})
  lines = local_runner.format_summary(summary).splitlines()
  assert lines[0] == ('warning: pushed baseline cannot be read (version 1: '
                      'serving/1/x is missing); no readable pushed version, '
                      'so absolute thresholds only')
  assert lines[1] == ('warning: warm start: pushed version 1: /m/1 checkpoint '
                      'is damaged; cold start')
  assert lines[2] == 'validation: BLESSED'


def test_no_warning_when_nothing_was_passed_over(tmp_path):
  summary = _summary(tmp_path, {'baseline_version': 2,
                                'baseline_unreadable': []})
  text = local_runner.format_summary(summary)
  assert 'warning:' not in text and text.startswith('validation: BLESSED')
  del summary['report']
  assert local_runner.format_summary(summary).startswith('validation:')


def test_cut_lines_dropped_tokens_and_a_new_store_are_warned(tmp_path):
  summary = _summary(tmp_path, {'baseline_version': 2,
                                'baseline_unreadable': []})
  summary['input_skipped'] = {'capped_lines': 2, 'dropped_long_tokens': 5,
                              'first_skipping_file': '/d/span-1/a.txt'}
  summary['store_note'] = '/h/metadata.sqlite is new or older than ...'
  lines = local_runner.format_summary(summary).splitlines()
  assert lines[:2] == [
      'warning: /h/metadata.sqlite is new or older than ...',
      'warning: input: 2 line(s) cut to their first 10000 tokens, 5 token(s) '
      'over 256 bytes dropped (first in /d/span-1/a.txt)']
  summary['input_skipped'] = {'capped_lines': 0, 'dropped_long_tokens': 0,
                              'first_skipping_file': None}
  assert 'input:' not in local_runner.format_summary(summary)


def test_empty_ids_are_warned_like_dropped_tokens(tmp_path):
  summary = _summary(tmp_path, {'baseline_version': 2,
                                'baseline_unreadable': []})
  summary['empty_ids'] = {'history': 0, 'item_id': 1, 'user_id': 3}
  assert local_runner.format_summary(summary).splitlines()[0] == (
      'warning: input: 1 record(s) with an empty item_id, 3 record(s) with '
      'an empty user_id (trained as no token: an empty id looks up no row)')
  summary['empty_ids'] = {'history': 0}
  assert 'input:' not in local_runner.format_summary(summary)


def test_a_nan_loss_names_the_tables_holding_nan(tmp_path):
  summary = _summary(tmp_path, {'baseline_version': 2,
                                'baseline_unreadable': []},
                     training={'steps': 5, 'final_loss': None})
  summary['health'] = {'tokens': {'nonfinite_values': 8},
                       'contexts': {'nonfinite_values': 0}}
  text = local_runner.format_summary(summary)
  assert ("training: 5 steps, None examples, final loss NaN/Inf (table "
          "'tokens' holds NaN/Inf)") in text
  summary['training']['final_loss'] = 2.5
  assert 'final loss 2.5,' in local_runner.format_summary(summary)


def test_the_summary_names_the_tables_warm_started(tmp_path):
  summary = _summary(tmp_path, {}, training={'steps': 5, 'warm_start': {
      'base_model': '/h/model/3', 'kept_tokens': 7, 'new_tokens': 2,
      'dropped_tokens': 1, 'dense': 'restored from the base (same module '
      'file)', 'tables': ['user', 'item']}})
  assert ('warm start: tables user, item from /h/model/3 (7 tokens kept, 2 '
          'new, 1 dropped; dense model restored from the base (same module '
          'file))') in local_runner.format_summary(summary).splitlines()


def test_the_summary_names_the_tables_cold_started(tmp_path):
  from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
  from tpu_embeddings.spec.embedding_spec import FeatureSpec
  from tpu_embeddings.spec.embedding_spec import TableSpec
  EmbeddingSpec(tables=(TableSpec('user', 4), TableSpec('item', 4)),
                features=(FeatureSpec('user_id', 'user'),
                          FeatureSpec('item_id', 'item'))).save(str(tmp_path))
  summary = _summary(tmp_path, {}, training={'steps': 5, 'warm_start': None})
  summary['model'] = str(tmp_path)
  assert 'cold start: tables user, item initialized' in (
      local_runner.format_summary(summary).splitlines())
  summary['training']['dense_model'] = True
  assert ('cold start: tables user, item initialized; dense model '
          'initialized') in local_runner.format_summary(summary).splitlines()
