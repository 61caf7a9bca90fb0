"""Tests for components/exporter/executor.py: the TFX side of one export
(tpu_embeddings/exports is tested in tests/tpu_embeddings/exports)."""

import json
import os

import numpy as np
from tfx.types import standard_artifacts
from tfx.utils import path_utils

from components import keys
from components.exporter import executor
from tests.support import artifact_fixtures
from tpu_embeddings.artifacts import export_kinds

TOKENS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta']


def _model_artifact(uri):
  a = standard_artifacts.Model()
  a.uri = uri
  return a


def _outputs(root):
  outputs = {key: _model_artifact(str(root / key / '9'))
             for key in (keys.SERVING_MODEL, keys.HUB_MODULE)}
  for artifact in outputs.values():
    os.makedirs(artifact.uri)  # TFX creates them before the executor runs
  return outputs


def test_every_output_holds_its_export_and_names_its_model(tmp_path):
  model_uri = str(tmp_path / 'trainer' / 'model' / '7')
  artifact_fixtures.write_tpu_format_model(model_uri, TOKENS)
  outputs = _outputs(tmp_path / 'exporter')
  executor.Executor().Do(
      {keys.MODEL: [_model_artifact(model_uri)]},
      {key: [artifact] for key, artifact in outputs.items()},
      {'config': json.dumps({'num_oov_buckets': 1,
                             'l2_regularization': 1e-4})})
  for artifact in outputs.values():
    assert artifact.get_string_custom_property(
        keys.SOURCE_MODEL) == model_uri
    assert artifact.get_int_custom_property(keys.EXPORTED) == 1
  serving = outputs[keys.SERVING_MODEL].uri
  # TFX's layout: path_utils.serving_model_path(uri) is the SavedModel.
  assert os.listdir(serving) == ['Format-Serving']
  assert os.path.exists(os.path.join(
      path_utils.serving_model_path(serving), 'saved_model.pb'))
  assert os.path.exists(os.path.join(outputs[keys.HUB_MODULE].uri,
                                     'tfhub_module.pb'))
  for key in outputs:
    assert os.listdir(tmp_path / 'exporter' / key) == ['9']


def test_every_export_kind_has_an_output_channel():
  assert set(executor.OUTPUTS) == set(export_kinds.NAMES)


def test_an_unblessed_model_is_not_exported(tmp_path):
  """Its table may be NaN: no export could pass the load check."""
  model_uri = str(tmp_path / 'model')
  artifact_fixtures.write_tpu_format_model(
      model_uri, TOKENS, table=np.full([len(TOKENS), 8], np.nan, np.float32))
  blessing = standard_artifacts.ModelBlessing()
  blessing.uri = str(tmp_path / 'blessing')
  blessing.set_int_custom_property('blessed', 0)
  outputs = _outputs(tmp_path)
  executor.Executor().Do(
      {keys.MODEL: [_model_artifact(model_uri)],
       keys.MODEL_BLESSING: [blessing]},
      {key: [artifact] for key, artifact in outputs.items()},
      {'config': json.dumps({})})
  for artifact in outputs.values():
    assert os.listdir(artifact.uri) == []
    assert artifact.get_int_custom_property(keys.EXPORTED) == 0
    assert artifact.get_string_custom_property(
        keys.SOURCE_MODEL) == model_uri
