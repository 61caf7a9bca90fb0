"""A module's declared metrics in TensorBoard: the two-tower example's
recall_at_10 under eval/ at each checkpoint, read by TensorBoard's own
event reader, each point what a fresh restore of that checkpoint scores."""

import os
import shutil

import pytest
import tensorflow as tf
from tensorboard.backend.event_processing import event_accumulator

from tests.support import interaction_fixtures
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import model_restore


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  root = str(tmp_path_factory.mktemp('two-tower-tensorboard'))
  interaction_fixtures.train(root, checkpoint_every=4, train_steps=12)
  reader = event_accumulator.EventAccumulator(
      os.path.join(root, 'model-run', 'eval'),
      size_guidance={event_accumulator.TENSORS: 0})
  reader.Reload()
  return {'root': root, 'model': os.path.join(root, 'model'),
          'reader': reader}


def _fresh_recall(model_uri: str, step: int, directory: str) -> float:
  """What the validator's path scores: checkpoint `step` restored alone."""
  module = interaction_fixtures.module()
  ctx = model_restore.context(
      model_uri, module, [os.path.join(os.path.dirname(model_uri),
                                       'examples')])
  path = os.path.join(model_layout.checkpoint_dir(model_uri), f'ckpt-{step}')
  restored = model_restore.restore(model_uri, module, ctx, path)
  serving = restored.serving_model(restored.write_vocabularies(directory))
  return module.evaluate(serving.served(), ctx)['recall_at_10']


@pytest.mark.slow
def test_declared_metrics_at_every_checkpoint(trained, tmp_path):
  reader = trained['reader']
  assert 'recall_at_10' in reader.Tags()[event_accumulator.TENSORS]
  points = {e.step: float(tf.make_ndarray(e.tensor_proto))
            for e in reader.Tensors('recall_at_10')}
  # Cold start: no checkpoint before step 4, then one every 4 steps.
  assert sorted(points) == [4, 8, 12]
  for step in sorted(points):
    assert points[step] == pytest.approx(_fresh_recall(
        trained['model'], step, str(tmp_path / str(step))), abs=1e-6), step


@pytest.mark.slow
def test_without_an_eval_split_training_goes_on_without_metrics(tmp_path):
  root = str(tmp_path)
  interaction_fixtures.inputs(root)
  shutil.rmtree(os.path.join(root, 'examples', 'Split-eval'))
  metadata = interaction_fixtures.train(root, checkpoint_every=4,
                                        train_steps=8)
  assert metadata['steps'] == 8
  assert not os.path.exists(os.path.join(root, 'model-run', 'eval'))


@pytest.mark.slow
def test_a_failing_eval_fn_is_warned_once_and_training_goes_on(tmp_path,
                                                               caplog):
  from components import module_file
  with open(interaction_fixtures.MODULE_FILE, encoding='utf-8') as f:
    source = f.read()
  path = tmp_path / 'my_model.py'
  path.write_text(source.replace(
      'def eval_fn(serve, ctx):\n',
      'def eval_fn(serve, ctx):\n  raise RuntimeError("boom")\n'))
  module = module_file.from_exec_properties({'module_file': str(path)})
  root = str(tmp_path / 'run')
  metadata = interaction_fixtures.train(root, module_object=module,
                                        checkpoint_every=4, train_steps=8)
  assert metadata['steps'] == 8
  warned = [r.getMessage() for r in caplog.records
            if 'in TensorBoard from' in r.getMessage()]
  assert warned == [
      'EmbeddingTrainer: no recall_at_10 in TensorBoard from ckpt-4 on: '
      f'module file {path}: eval_fn raised RuntimeError: boom'], warned
  assert not os.path.exists(os.path.join(root, 'model-run', 'eval'))
