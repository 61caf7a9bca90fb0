"""The trainer's TensorBoard files, read by TensorBoard's own readers and
plugins.

A real training run writes `<root>/EmbeddingTrainer/model_run/7`; the event
multiplexer (what `tensorboard --logdir <root>/EmbeddingTrainer` loads), the
hparams plugin's session-group handler and the projector plugin's HTTP routes
read it back.
"""

import collections
import json
import os
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorboard import context as tb_context
from tensorboard.backend.event_processing import data_provider
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.data import provider as provider_lib
from tensorboard.plugins import base_plugin
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import backend_context
from tensorboard.plugins.hparams import list_session_groups
from tensorboard.plugins.projector import projector_plugin
from tensorboard.plugins.scalar import metadata as scalar_metadata
from werkzeug import test as werkzeug_test

from components.trainer import executor
from pipelines import demo_data
from pipelines.config import PipelineConfig
from tests.support import artifact_fixtures as fx
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models import skipgram_eval_data as eval_data
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training import tensorboard_logs
from tpu_embeddings.validation.config import ValidatorConfig

RUN = 'model_run/7'
PROJECTOR_TOKENS = 60


def _train(root, splits, config, counts=None):
  fx.write_examples(os.path.join(root, 'examples'), splits)
  counts = counts or collections.Counter(
      t for line in splits['train'] for t in line)
  fx.write_vocabulary(os.path.join(root, 'vocabulary'), counts)
  logdir = os.path.join(root, 'EmbeddingTrainer')
  model = os.path.join(logdir, 'model', '7')
  executor.train(
      executor.TrainerArgs(
          [fx.SpanlessExamples(os.path.join(root, 'examples'))],
          os.path.join(root, 'vocabulary'), model, os.path.join(logdir, RUN)),
      config)
  return logdir, model


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('tensorboard'))
  lines = [l.split() for span in (1, 2) for l in demo_data.span_lines(span)]
  spec = skipgram_spec(dim=16, optimizer='adagrad', learning_rate=0.5,
                       initial_accumulator_value=1e-3)
  config = executor.TrainerConfig(
      embedding_spec=spec.to_json(), batch_size=128, train_steps=200,
      checkpoint_every=50, log_every=25, summary_every=10,
      projector_tokens=PROJECTOR_TOKENS)
  logdir, model = _train(root, {'train': lines, 'eval': lines[:300]}, config)
  multiplexer = plugin_event_multiplexer.EventMultiplexer()
  multiplexer.AddRunsFromDirectory(logdir)
  multiplexer.Reload()
  return {'root': root, 'logdir': logdir, 'model': model,
          'multiplexer': multiplexer}


def _scalars(multiplexer, run, tag):
  """{step: value} of `tag` as the scalars dashboard reads it."""
  provider = data_provider.MultiplexerDataProvider(multiplexer, '')
  series = provider.read_scalars(
      tb_context.RequestContext(), experiment_id='',
      plugin_name=scalar_metadata.PLUGIN_NAME, downsample=10_000,
      run_tag_filter=provider_lib.RunTagFilter(runs=[run], tags=[tag]))
  return {point.step: point.value for point in series[run][tag]}


def _tb_context(trained):
  mux = trained['multiplexer']
  return base_plugin.TBContext(
      logdir=trained['logdir'], multiplexer=mux,
      data_provider=data_provider.MultiplexerDataProvider(
          mux, trained['logdir']))


def test_a_writer_writes_every_point_eagerly_then_compiled(tmp_path):
  """Short writes go eagerly, then (past EAGER_WRITES) through the traced
  function, as does a long one: the dashboard reads every point either
  way, as one series."""
  scalars = tensorboard_logs._Scalars(str(tmp_path))
  writes = scalars.EAGER_WRITES + 5
  for w in range(writes):
    scalars.write('loss', [10 * w + 1, 10 * w + 2], [w + 0.25, w + 0.5])
  scalars.write('loss', list(range(1000, 1040)), [0.5] * 40)
  scalars.writer.flush()
  assert scalars._write.experimental_get_tracing_count() == 1
  multiplexer = plugin_event_multiplexer.EventMultiplexer()
  multiplexer.AddRunsFromDirectory(str(tmp_path))
  multiplexer.Reload()
  points = _scalars(multiplexer, '.', 'loss')
  assert points == {
      **{10 * w + 1: w + 0.25 for w in range(writes)},
      **{10 * w + 2: w + 0.5 for w in range(writes)},
      **{step: 0.5 for step in range(1000, 1040)}}


def test_train_points_are_written_in_batches_and_all_by_the_end(tmp_path):
  """Points wait until WRITE_POINTS of them (or WRITE_SECONDS) are held,
  then go in one write; finish writes the rest and the last partial mean."""
  config = executor.TrainerConfig(summary_every=2, projector_tokens=0)
  logs = tensorboard_logs.RunLogs(str(tmp_path), config,
                                  skipgram_spec(vocabulary_size=4), [])
  logs.WRITE_POINTS, logs.WRITE_SECONDS = 6, 3600.0

  def points():
    logs._scalars(tensorboard_logs.TRAIN_SUBDIR).writer.flush()
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(tmp_path))
    multiplexer.Reload()
    if 'loss' not in multiplexer.Runs().get('train', {}).get('tensors', []):
      return {}
    return _scalars(multiplexer, 'train', 'loss')

  logs.train_steps(0, np.float32([1, 3, 5]), 10.0)  # 1 loss point, 1 rate
  assert points() == {}
  logs.train_steps(3, np.float32([7, 9, 11, 13, 15, 17]), 10.0)  # 4 + 2
  assert points() == {2: 2.0, 4: 6.0, 6: 10.0, 8: 14.0}
  logs.train_steps(9, np.float32([19]), 10.0)
  assert len(points()) == 4
  logs.finish(10, None)
  assert points() == {2: 2.0, 4: 6.0, 6: 10.0, 8: 14.0, 10: 18.0}


@pytest.mark.slow
def test_loss_every_summary_every_steps_and_eval_loss_per_checkpoint(trained):
  mux = trained['multiplexer']
  assert {RUN, f'{RUN}/train', f'{RUN}/eval'} <= set(mux.Runs())
  loss = _scalars(mux, f'{RUN}/train', 'loss')
  # Calls of 25 steps, a point every 10 steps across call boundaries.
  assert sorted(loss) == list(range(10, 201, 10))
  assert sorted(_scalars(mux, f'{RUN}/train', 'examples_per_sec')) == list(
      range(25, 201, 25))
  untrained = 6 * np.log(2)
  assert loss[10] == pytest.approx(untrained, abs=0.05)
  assert loss[200] < untrained - 0.1
  held_out = _scalars(mux, f'{RUN}/eval', 'loss')
  assert sorted(held_out) == [0, 50, 100, 150, 200]  # start + checkpoints
  assert held_out[0] == pytest.approx(untrained, abs=0.01)
  assert held_out[200] < held_out[50] < held_out[0]
  assert held_out[200] < held_out[0] - 0.1


def test_last_eval_point_is_the_validators_eval_loss(trained):
  """Same sample, same loss code: the validator scores what TensorBoard shows.
  """
  model = trained['model']
  table = tf.train.load_checkpoint(model_layout.latest_checkpoint(
      model)).get_tensor(model_layout.table_key('tokens'))
  data = eval_data.load([os.path.join(trained['root'], 'examples')],
                        vocabulary_file.read(model), ValidatorConfig(),
                        eval_data.trained_skipgram(model))
  quality = eval_data.quality(table, data, k=10)
  held_out = _scalars(trained['multiplexer'], f'{RUN}/eval', 'loss')
  assert held_out[200] == pytest.approx(quality['eval_loss'], rel=1e-5)


def test_hparams_plugin_finds_the_settings_and_final_metrics(trained):
  request = api_pb2.ListSessionGroupsRequest(
      start_index=0, slice_size=10,
      allowed_statuses=[api_pb2.STATUS_UNKNOWN, api_pb2.STATUS_SUCCESS,
                        api_pb2.STATUS_RUNNING])
  response = list_session_groups.Handler(
      tb_context.RequestContext(),
      backend_context.Context(_tb_context(trained)), '', request).run()
  [group] = response.session_groups
  hparams = {k: getattr(v, v.WhichOneof('kind'))
             for k, v in group.hparams.items()}
  assert hparams['dim'] == 16 and hparams['optimizer'] == 'adagrad'
  assert hparams['learning_rate'] == pytest.approx(0.5)
  assert hparams['batch_size'] == 128 and hparams['train_steps'] == 200
  assert hparams['vocabulary_size'] == len(vocabulary_file.read(
      trained['model']))
  assert hparams['projector_tokens'] == PROJECTOR_TOKENS
  assert 'embedding_spec' not in hparams
  final = {(m.name.group, m.name.tag): (m.training_step, m.value)
           for m in group.metric_values}
  mux = trained['multiplexer']
  assert final[('eval', 'loss')] == (200, pytest.approx(
      _scalars(mux, f'{RUN}/eval', 'loss')[200]))
  assert final[('train', 'loss')] == (200, pytest.approx(
      _scalars(mux, f'{RUN}/train', 'loss')[200]))
  assert ('train', 'examples_per_sec') in final


def test_projector_plugin_serves_the_most_frequent_tokens(trained):
  plugin = projector_plugin.ProjectorPlugin(_tb_context(trained))
  deadline = time.time() + 60
  while not plugin.is_active():
    assert time.time() < deadline, 'projector never became active'
    time.sleep(0.2)
  apps = plugin.get_plugin_apps()

  def get(route, **args):
    response = werkzeug_test.Client(apps[route]).get(route, query_string=args)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data()

  # Only the train run: the scalars' subruns must not list it again.
  run = f'{RUN}/train'
  assert json.loads(get('/runs')) == [run]
  [embedding] = json.loads(get('/info', run=run))['embeddings']
  name = embedding['tensorName']
  assert embedding['tensorShape'] == [PROJECTOR_TOKENS, 16]
  vocab = vocabulary_file.read(trained['model'])
  table = tf.train.load_checkpoint(model_layout.latest_checkpoint(
      trained['model'])).get_tensor(model_layout.table_key('tokens'))
  served = np.frombuffer(get('/tensor', run=run, name=name), np.float32)
  np.testing.assert_array_equal(served.reshape(PROJECTOR_TOKENS, 16),
                                table[:PROJECTOR_TOKENS])
  lines = get('/metadata', run=run, name=name).decode().splitlines()
  assert lines[0] == 'token\tcount'
  assert lines[1:] == [f'{t}\t{c}' for t, c in zip(
      vocab.tokens[:PROJECTOR_TOKENS], vocab.counts[:PROJECTOR_TOKENS])]
  # The most frequent tokens: no token outside them is more frequent.
  assert min(vocab.counts[:PROJECTOR_TOKENS]) >= max(
      vocab.counts[PROJECTOR_TOKENS:])


@pytest.mark.slow
def test_small_vocabulary_all_rows_and_projector_off(tmp_path):
  lines = [['a', 'b', 'c'], ['c', 'd', 'a']] * 20
  spec = skipgram_spec(dim=4).to_json()
  # No subsampling: 4 tokens this frequent are all but dropped, and the
  # held-out sample would give no pairs.
  logdir, _ = _train(str(tmp_path / 'small'), {'train': lines, 'eval': lines},
                     executor.TrainerConfig(embedding_spec=spec, batch_size=8,
                                            train_steps=5, subsample=0.0))
  config_file = os.path.join(logdir, RUN, 'train', 'projector_config.pbtxt')
  assert os.path.exists(config_file)
  reader = tf.train.load_checkpoint(os.path.join(logdir, RUN, 'train'))
  assert reader.get_variable_to_shape_map()[
      'tokens/.ATTRIBUTES/VARIABLE_VALUE'] == [4, 4]
  # Off, and no eval split: training still writes its loss curve.
  logdir, _ = _train(str(tmp_path / 'off'), {'train': lines},
                     executor.TrainerConfig(embedding_spec=spec, batch_size=8,
                                            train_steps=5, projector_tokens=0))
  assert not os.path.exists(os.path.join(logdir, RUN, 'eval'))
  train_files = os.listdir(os.path.join(logdir, RUN, 'train'))
  assert [f for f in train_files if not f.startswith('events.')] == []


def test_settings_are_checked_and_reach_the_pipeline_config():
  with pytest.raises(ValueError, match='projector_tokens must be an integer'):
    executor.TrainerConfig(projector_tokens=-1)
  with pytest.raises(ValueError, match='summary_every must be an integer'):
    executor.TrainerConfig(summary_every=0)
  config = PipelineConfig.from_dict({'trainer.projector_tokens': 5,
                                     'summary_every': 20}).trainer_config()
  assert (config.projector_tokens, config.summary_every) == (5, 20)
  assert tensorboard_logs.hparams(
      config, config.spec())['projector_tokens'] == 5
