"""CheckpointValidator as a TFX component, run by LocalDagRunner with MLMD."""

import json
import os

import pytest
from tfx import v1 as tfx
from tfx.orchestration import metadata
from tfx.types import standard_artifacts

from components import artifact_types
from components.validator.component import CheckpointValidator
from tests.support import artifact_fixtures
from tests.support import validator_fixtures as vf


def _importer(name, uri, artifact_type, **properties):
  return tfx.dsl.Importer(source_uri=uri, artifact_type=artifact_type,
                          properties=properties or None).with_id(name)


def _inputs(corpus, model):
  return (_importer('model_importer', model, standard_artifacts.Model),
          _importer('examples_importer', corpus['examples'],
                    standard_artifacts.Examples,
                    split_names='["train", "eval"]'),
          _importer('vocabulary_importer', corpus['vocabulary'],
                    artifact_types.Vocabulary))


def test_parameters_are_checked_when_the_pipeline_is_built(tmp_path):
  corpus = vf.write_corpus(str(tmp_path))
  model, examples, vocab = _inputs(corpus, str(tmp_path / 'model'))
  kwargs = dict(model=model.outputs['result'],
                examples=examples.outputs['result'],
                vocabulary=vocab.outputs['result'])
  with pytest.raises(ValueError, match='max_row_norm must be a number >='):
    CheckpointValidator(**kwargs, max_row_norm=-1.0)
  with pytest.raises(ValueError, match='parameter k must be an integer >= 1'):
    CheckpointValidator(**kwargs, k=0)
  v = CheckpointValidator(**kwargs, min_recall_at_k=1,
                          sparsecore_restore_info={'num_tpu_devices': 1,
                                                   'num_sc_chips_per_tpu': 4})
  config = json.loads(v.exec_properties['config'])
  assert config['min_recall_at_k'] == 1.0
  assert config['sparsecore_restore_info'] == {
      'num_tpu_devices': 1, 'num_sc_chips_per_tpu': 4}
  assert config['max_eval_loss'] is None


def test_local_dag_runner_blesses_and_records_properties(tmp_path):
  corpus = vf.write_corpus(str(tmp_path))
  model_uri = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(
      model_uri, corpus['vocab'].tokens,
      table=vf.topic_table(corpus['vocab'].tokens, 0.1))
  model, examples, vocab = _inputs(corpus, model_uri)
  validator = CheckpointValidator(
      model=model.outputs['result'], examples=examples.outputs['result'],
      vocabulary=vocab.outputs['result'],
      push_root=str(tmp_path / 'never-pushed'),
      related_pairs_file=corpus['related'], min_related_recall_at_k=0.2,
      # A hand-made topic table, not a skip-gram model (see validator_runs).
      beat_frequency_model=False)
  db = str(tmp_path / 'metadata.sqlite')
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name='validator-test',
      pipeline_root=str(tmp_path / 'root'),
      components=[model, examples, vocab, validator],
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(db))))
  with metadata.Metadata(
      tfx.orchestration.metadata.sqlite_metadata_connection_config(db)) as m:
    [blessing] = m.store.get_artifacts_by_type(
        standard_artifacts.ModelBlessing.TYPE_NAME)
    [validated] = m.store.get_artifacts_by_uri(model_uri)
  props = blessing.custom_properties
  assert props['blessed'].int_value == 1
  assert props['current_model'].string_value == model_uri
  # What LatestBlessedModelStrategy matches against the Model's id.
  assert props['current_model_id'].int_value == validated.id
  assert props['baseline_model'].string_value == ''
  assert os.path.exists(os.path.join(blessing.uri, 'BLESSED'))
  with open(os.path.join(blessing.uri, 'report.json')) as f:
    report = json.load(f)
  assert 'absolute/related_recall_at_k' in [g['name'] for g in report['gates']]
