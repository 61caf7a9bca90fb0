"""Small real exports for the pusher and consumer tests.

`write_serving_model` saves a TF2 SavedModel whose `serving_default` returns
`x * scale` (so a version's identity shows in its outputs);
`write_hub_module` exports a TF1 Hub module with the same computation.
"""

import json
import os

import tensorflow as tf
import tensorflow_hub as hub
from tfx.types import standard_artifacts

from components import keys
from tpu_embeddings.artifacts import serving_contract


def write_serving_model(path: str, scale: float) -> str:
  module = tf.Module()
  module.scale = tf.Variable(scale, dtype=tf.float32)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
  def serve(x):
    return {'y': x * module.scale}

  tf.saved_model.save(module, path, signatures={'serving_default': serve})
  return path


def write_hub_module(path: str, scale: float) -> str:
  def module_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None])
    w = tf.compat.v1.get_variable(
        'scale', [], initializer=tf.compat.v1.constant_initializer(scale))
    hub.add_signature(inputs=x, outputs=x * w)

  with tf.Graph().as_default():
    module = hub.Module(hub.create_module_spec(module_fn))
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      module.export(path, session)
  return path


def serving_scale(path: str) -> float:
  loaded = tf.saved_model.load(path)
  out = loaded.signatures['serving_default'](x=tf.constant([1.0]))
  return float(out['y'].numpy()[0])


def hub_scale(path: str) -> float:
  return float(hub.load(path).signatures['default'](tf.constant([1.0]))
               ['default'].numpy()[0])


def make_artifacts(base: str, scale: float, blessed: bool = True,
                   source_model: str = '', spans=(3, 4), metrics=None,
                   validated_against=None):
  """(serving Model, hub Model, ModelBlessing) artifacts with real files.

  The serving Model holds its SavedModel in `Format-Serving/`, as the
  exporter writes it. The blessing's report says it was validated against
  `validated_against` (a `served.identity`; None: nothing served).
  """
  if source_model == '':
    source_model = os.path.join(base, 'trainer_model')
    os.makedirs(source_model, exist_ok=True)
    with open(os.path.join(source_model, 'metadata.json'), 'w') as f:
      json.dump({'steps': 1, 'spans': list(spans), 'device': 'cpu'}, f)
  serving = standard_artifacts.Model()
  serving.uri = os.path.join(base, 'serving_model')
  write_serving_model(serving_contract.serving_model_path(serving.uri), scale)
  hub_module = standard_artifacts.Model()
  hub_module.uri = write_hub_module(os.path.join(base, 'hub_module'), scale)
  for a in (serving, hub_module):
    a.set_string_custom_property('source_model', source_model)
  blessing = standard_artifacts.ModelBlessing()
  blessing.uri = os.path.join(base, 'blessing')
  os.makedirs(blessing.uri, exist_ok=True)
  blessing.set_int_custom_property('blessed', int(blessed))
  open(os.path.join(blessing.uri, 'BLESSED' if blessed else 'NOT_BLESSED'),
       'w').close()
  write_report(blessing.uri, metrics if metrics is not None else
               {'neighbor_recall': 0.5}, validated_against)
  return serving, hub_module, blessing


def write_report(blessing_uri: str, metrics, validated_against,
                 eval_span=None):
  """The blessing's report.json, as the validator writes its fields (its
  eval data's span only when `eval_span` is given, as reports of before)."""
  report = {'metrics': metrics, keys.VALIDATED_AGAINST: validated_against}
  if eval_span is not None:
    report['eval_data'] = {'split': 'eval', keys.SPAN: eval_span}
  with open(os.path.join(blessing_uri, 'report.json'), 'w') as f:
    json.dump(report, f)
