"""The serving model of a module file, saved: its Hub call and losses are
traced once each, and the SavedModel answers as the model did."""

import os

import numpy as np
import tensorflow as tf

from pipelines import model_settings
from tests.support import paths
from tpu_embeddings.models import model_restore
from tpu_embeddings.models import served
from tpu_embeddings.training.config import TrainerConfig
from tpu_embeddings.training.selftest import synthetic

RATING = os.path.join(paths.REPO, 'examples', 'rating', 'rating_model.py')


def _rating_model(directory):
  module = model_settings.load(RATING)
  ctx = synthetic.context(module, TrainerConfig(), 6)
  built = model_restore.untrained(model_restore.RestoredModule(
      module, ctx, synthetic.resolved_spec(module, ctx), model=None,
      embedding=None))
  return built.serving_model(built.write_vocabularies(directory))


def test_save_traces_the_hub_call_once_per_training_flag(tmp_path):
  serving = _rating_model(str(tmp_path / 'vocabularies'))
  serving.save(str(tmp_path / 'saved'))
  # training False and True; a trace outside the save's context would be
  # traced again by tf.saved_model.save, four in all.
  assert serving.__call__.experimental_get_tracing_count() == 2
  loaded = tf.saved_model.load(str(tmp_path / 'saved'))
  inputs = serving.sample_inputs()['serving_default']
  want = serving.served()['serving_default'](**inputs)
  got = served.from_loaded(loaded)['serving_default'](**inputs)
  for key, value in want.items():
    np.testing.assert_allclose(got[key], value, atol=1e-6)
  hub_inputs = {f: tf.constant(['1 2', '', '3'])
                for f in serving._module.hub_features}
  for training in (False, True):
    np.testing.assert_allclose(
        loaded(hub_inputs, training=training),
        serving(hub_inputs, training=training), atol=1e-6)
