import dataclasses

import numpy as np
import pytest

from tests.support import artifact_fixtures
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec import embedding_variables
from tpu_embeddings.spec.embedding_spec import FeatureSpec
from tpu_embeddings.spec.embedding_spec import TableSpec

TOKENS = [f't{i}' for i in range(6)]


@pytest.fixture(scope='module')
def model(tmp_path_factory):
  uri = str(tmp_path_factory.mktemp('model'))
  table = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
  spec = artifact_fixtures.write_tpu_format_model(
      uri, TOKENS, spec=skipgram_spec(dim=8, optimizer='adam'), table=table)
  return uri, spec, table


def test_restores_the_table_and_no_slot(model):
  uri, _, table = model
  restored = checkpoint_restore.restore_for_serving(uri)
  np.testing.assert_array_equal(restored.table_numpy('tokens'), table)
  assert list(embedding_variables.table_variables(restored.embedding)[
      'tokens']) == ['parameters']
  assert restored.vocabulary.tokens == tuple(TOKENS)


def test_mis_shaped_table_names_both_shapes(model):
  uri, spec, _ = model
  wrong = dataclasses.replace(spec, tables=(dataclasses.replace(
      spec.tables[0], dim=4),))
  with pytest.raises(checkpoint_restore.CheckpointError,
                     match=r"table 'tokens' has shape \[6, 8\] but the spec "
                     r"says \[6, 4\]"):
    checkpoint_restore.check_tables(wrong, checkpoint_restore.model_layout
                                    .latest_checkpoint(uri))


def test_missing_and_extra_tables_are_named(model):
  uri, spec, _ = model
  path = checkpoint_restore.model_layout.latest_checkpoint(uri)
  renamed = dataclasses.replace(
      spec, tables=(dataclasses.replace(spec.tables[0], name='items'),),
      features=tuple(dataclasses.replace(f, table='items')
                     for f in spec.features))
  with pytest.raises(checkpoint_restore.CheckpointError,
                     match="table 'items' .* is missing"):
    checkpoint_restore.check_tables(renamed, path)
  more = dataclasses.replace(
      spec,
      tables=spec.tables + (TableSpec('extra', dim=2, vocabulary_size=3),),
      features=spec.features + (FeatureSpec('f', 'extra'),))
  with pytest.raises(checkpoint_restore.CheckpointError, match="'extra'"):
    checkpoint_restore.check_tables(more, path)


def test_truncated_checkpoint_is_a_clear_error(tmp_path):
  uri = str(tmp_path)
  artifact_fixtures.write_tpu_format_model(uri, TOKENS)
  path = checkpoint_restore.model_layout.latest_checkpoint(uri)
  data = next((tmp_path / 'checkpoint').glob('*.data-*'))
  data.write_bytes(data.read_bytes()[:10])
  with pytest.raises(checkpoint_restore.CheckpointError, match=path):
    checkpoint_restore.restore_for_serving(uri)

