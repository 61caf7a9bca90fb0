"""Tests for components/exporter/component.py: a real LocalDagRunner run."""

import os

import pytest
from ml_metadata.metadata_store import metadata_store
from tfx import v1 as tfx
from tfx.orchestration import metadata
from tfx.types import standard_artifacts

from components import keys
from components.exporter.component import EmbeddingExporter
from tests.support import artifact_fixtures
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.models.skipgram_features import skipgram_spec

TOKENS = ['one', 'two', 'three', 'four']


@pytest.mark.slow
def test_pipeline_run_records_both_models(tmp_path):
  model_uri = str(tmp_path / 'trained')
  artifact_fixtures.write_tpu_format_model(
      model_uri, TOKENS, spec=skipgram_spec(dim=4, optimizer='adam'))
  importer = tfx.dsl.Importer(
      source_uri=model_uri, artifact_type=standard_artifacts.Model).with_id(
          'model_importer')
  exporter = EmbeddingExporter(model=importer.outputs['result'],
                               l2_regularization=0.0)
  db = str(tmp_path / 'metadata.sqlite')
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name='exporter_test',
      pipeline_root=str(tmp_path / 'root'),
      components=[importer, exporter],
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(db))))

  store = metadata_store.MetadataStore(
      metadata.sqlite_metadata_connection_config(db))
  models = store.get_artifacts_by_type(standard_artifacts.Model.TYPE_NAME)
  outputs = [m for m in models if m.uri != model_uri]
  assert len(outputs) == 2
  found = {}
  for m in outputs:
    assert m.custom_properties[
        keys.SOURCE_MODEL].string_value == model_uri
    assert m.state == m.LIVE
    found[os.path.basename(os.path.dirname(m.uri))] = m.uri
  assert sorted(found) == ['hub_module', 'serving_model']
  assert os.path.exists(os.path.join(
      serving_contract.serving_model_path(found['serving_model']),
      'saved_model.pb'))
  assert os.path.exists(os.path.join(found['hub_module'], 'tfhub_module.pb'))


@pytest.mark.parametrize('kwargs, message', [
    (dict(num_oov_buckets=0), 'num_oov_buckets must be an integer >= 1'),
    (dict(num_oov_buckets=True), 'num_oov_buckets must be an integer, got'),
    (dict(l2_regularization=-0.1), 'l2_regularization must be a number >= 0'),
    (dict(l2_regularization=float('nan')), 'l2_regularization must be a'),
])
def test_bad_parameters(kwargs, message):
  importer = tfx.dsl.Importer(source_uri='/tmp/x',
                              artifact_type=standard_artifacts.Model)
  with pytest.raises(ValueError, match=message):
    EmbeddingExporter(model=importer.outputs['result'], **kwargs)
