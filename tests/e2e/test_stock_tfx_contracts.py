"""Stock TFX components consume our artifacts: a real LocalDagRunner pipeline.

Our six components plus stock `tfx.components.Pusher` (filesystem
destination), fed our exporter's `serving_model` and our blessing, and a
`LatestBlessedModelStrategy` resolver over every `Model` of the pipeline.
Run 1 blesses; run 2 trains another model and does not bless it; the resolver
must then pick run 1's model.
"""

import os

import pytest
import tensorflow as tf
from ml_metadata.metadata_store import metadata_store
from tfx import v1 as tfx
from tfx.orchestration import metadata
from tfx.types import standard_artifacts
from tfx.utils import path_utils

from pipelines import demo_data
from pipelines import pipeline as pipeline_lib
from pipelines.config import PipelineConfig
from pipelines.local import metadata_queries as mq
from tpu_embeddings.artifacts import serving_contract

NAME = 'stock-contracts'
TINY = demo_data.CorpusShape(topics=4, tokens_per_topic=12, filler_tokens=6,
                             lines_per_span=300, related_per_topic=4)
SETTINGS = {'train_steps': 100, 'batch_size': 256, 'dim': 8,
            'checkpoint_every': 100, 'regression_margin': 0.5}
RESOLVER = 'latest_blessed_model'
STOCK_PUSHER = 'StockPusher'


def _resolver():
  return tfx.dsl.Resolver(
      strategy_class=tfx.dsl.experimental.LatestBlessedModelStrategy,
      model=tfx.dsl.Channel(type=standard_artifacts.Model),
      model_blessing=tfx.dsl.Channel(
          type=standard_artifacts.ModelBlessing)).with_id(RESOLVER)


def _run(root, config, stock_push_dir, with_ours=True):
  components = [_resolver()]
  if with_ours:
    ours = pipeline_lib.create_components(
        str(root / 'data'), str(root / 'pushed'), config)
    by_id = {c.id: c for c in ours}
    stock = tfx.components.Pusher(
        model=by_id['EmbeddingExporter'].outputs['serving_model'],
        model_blessing=by_id['CheckpointValidator'].outputs['blessing'],
        push_destination=tfx.proto.PushDestination(
            filesystem=tfx.proto.PushDestination.Filesystem(
                base_directory=stock_push_dir))).with_id(STOCK_PUSHER)
    components = ours + [stock] + components
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name=NAME, pipeline_root=str(root / 'pipeline'),
      components=components, enable_cache=True,
      metadata_connection_config=metadata.sqlite_metadata_connection_config(
          str(root / 'metadata.sqlite')),
      beam_pipeline_args=['--direct_running_mode=in_memory',
                          '--direct_num_workers=1']))


def _store(root):
  return metadata_store.MetadataStore(
      metadata.sqlite_metadata_connection_config(
          str(root / 'metadata.sqlite')))


def _latest_outputs(root):
  return mq.latest_run_outputs(_store(root), NAME)


def _resolved(root):
  """Artifacts the newest resolver execution handed on, by type name."""
  store = _store(root)
  executions = [e for e in store.get_executions()
                if mq._node_of(store, e.id) == RESOLVER]
  newest = max(executions, key=lambda e: e.id)
  ids = [e.artifact_id for e in store.get_events_by_execution_ids([newest.id])
         if e.type not in mq.INPUT_EVENTS]
  return {mq.artifact_type(store, a): a for a in store.get_artifacts_by_id(ids)}


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp('stock')
  demo_data.generate(str(root / 'data'), spans=1, seed=3, shape=TINY)
  config = PipelineConfig().replace(**SETTINGS)
  first_push = str(root / 'stock_pushed_1')
  _run(root, config, first_push)
  first = _latest_outputs(root)
  # Another model (new seed), not blessed (an impossible recall floor).
  _run(root, config.replace(**{'trainer.seed': 1, 'min_recall_at_k': 1.0}),
       str(root / 'stock_pushed_2'))
  second = _latest_outputs(root)
  _run(root, config, '', with_ours=False)
  return root, first, second, first_push


def test_exporter_serving_model_is_where_path_utils_looks(runs):
  _, first, _, _ = runs
  serving = first['EmbeddingExporter']['serving_model'].artifact
  path = path_utils.serving_model_path(serving.uri)
  assert path == serving_contract.serving_model_path(serving.uri)
  assert tf.saved_model.contains_saved_model(path), path
  loaded = tf.saved_model.load(path)
  assert serving_contract.LOOKUP in loaded.signatures


def test_blessing_names_the_model_it_blesses(runs):
  _, first, second, _ = runs
  for run, blessed in ((first, 1), (second, 0)):
    blessing = run['CheckpointValidator']['blessing'].artifact
    model = run['EmbeddingTrainer']['model'].artifact
    assert mq.custom_property(blessing, 'blessed') == blessed
    assert mq.custom_property(blessing, 'current_model') == model.uri
    assert mq.custom_property(blessing, 'current_model_id') == model.id


def test_stock_pusher_pushes_our_serving_model_given_our_blessing(runs):
  _, first, second, first_push = runs
  pushed = first[STOCK_PUSHER]['pushed_model'].artifact
  assert mq.custom_property(pushed, 'pushed') == 1
  destination = mq.custom_property(pushed, 'pushed_destination')
  assert os.path.dirname(destination) == first_push
  assert mq.custom_property(pushed, 'pushed_version') == os.path.basename(
      destination)
  loaded = tf.saved_model.load(destination)
  assert set(serving_contract.SIGNATURES) <= set(loaded.signatures)
  assert mq.custom_property(
      second[STOCK_PUSHER]['pushed_model'].artifact, 'pushed') == 0


def test_our_pushed_models_carry_the_stock_pusher_properties(runs):
  _, first, second, _ = runs
  for key, output in first['EmbeddingPusher'].items():
    artifact = output.artifact
    assert mq.custom_property(artifact, 'pushed') == 1, key
    version = mq.custom_property(artifact, 'pushed_version')
    assert isinstance(version, str) and version == '1'
    destination = mq.custom_property(artifact, 'pushed_destination')
    assert destination == str(runs[0] / 'pushed' / key.split('_')[-1] / '1')
  for output in second['EmbeddingPusher'].values():
    assert mq.custom_property(output.artifact, 'pushed') == 0


def test_latest_blessed_model_strategy_picks_our_last_blessed_model(runs):
  root, first, second, _ = runs
  resolved = _resolved(root)
  blessed_model = first['EmbeddingTrainer']['model'].artifact
  assert second['EmbeddingTrainer']['model'].artifact.id > blessed_model.id
  assert resolved['Model'].id == blessed_model.id
  assert resolved['ModelBlessing'].id == (
      first['CheckpointValidator']['blessing'].artifact.id)
