"""EmbeddingTrainer run for real by LocalDagRunner with SQLite ML Metadata."""

import collections
import os

import pytest
from tfx import types
from tfx import v1 as tfx
from tfx.orchestration import metadata

from components import artifact_types
from components.trainer.component import EmbeddingTrainer
from tests.support import artifact_fixtures as fx
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models.skipgram_features import skipgram_spec


@pytest.mark.slow
def test_component_trains_in_a_local_pipeline(tmp_path):
  lines = [['a', 'b', 'c', 'd'], ['c', 'd', 'e'], ['e', 'a', 'b']] * 20
  fx.write_examples(str(tmp_path / 'examples'), {'train': lines,
                                                 'eval': lines[:3]})
  fx.write_vocabulary(str(tmp_path / 'vocabulary'),
                      collections.Counter(t for l in lines for t in l))
  examples = tfx.dsl.Importer(
      source_uri=str(tmp_path / 'examples'),
      artifact_type=tfx.types.standard_artifacts.Examples,
      properties={'span': 4}).with_id('examples_importer')
  vocabulary = tfx.dsl.Importer(
      source_uri=str(tmp_path / 'vocabulary'),
      artifact_type=artifact_types.Vocabulary).with_id('vocabulary_importer')
  trainer = EmbeddingTrainer(
      examples=examples.outputs['result'],
      vocabulary=vocabulary.outputs['result'],
      embedding_spec=skipgram_spec(dim=4, learning_rate=0.2),
      batch_size=16, train_steps=5, epochs=0, subsample=0.0, log_every=5)
  db = str(tmp_path / 'metadata.sqlite')
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name='trainer-test', pipeline_root=str(tmp_path / 'root'),
      components=[examples, vocabulary, trainer],
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(db))))

  with metadata.Metadata(
      tfx.orchestration.metadata.sqlite_metadata_connection_config(db)) as m:
    models = m.store.get_artifacts_by_type('Model')
    runs = m.store.get_artifacts_by_type('ModelRun')
  assert len(models) == 1 and len(runs) == 1
  model_uri = models[0].uri
  meta = model_layout.read_metadata(model_uri)
  assert meta['steps'] == 5 and meta['spans'] == [4]
  assert meta['device'] == 'cpu'
  assert models[0].custom_properties['steps'].int_value == 5
  for name in ('embedding_spec.json', 'vocabulary.tsv', 'metadata.json'):
    assert os.path.exists(os.path.join(model_uri, name))
  model_layout.latest_checkpoint(model_uri)
  assert os.listdir(os.path.join(runs[0].uri, 'train'))


def test_bad_parameters_fail_when_the_pipeline_is_built():
  with pytest.raises(ValueError, match='window'):
    EmbeddingTrainer(examples=types.Channel(
        type=tfx.types.standard_artifacts.Examples),
                     vocabulary=types.Channel(
                         type=artifact_types.Vocabulary),
                     embedding_spec=skipgram_spec(), window=0)
  with pytest.raises(ValueError, match='embedding spec'):
    EmbeddingTrainer(examples=types.Channel(
        type=tfx.types.standard_artifacts.Examples),
                     vocabulary=types.Channel(
                         type=artifact_types.Vocabulary),
                     embedding_spec='not json')
