"""A module file's pushed exports, used the way their clients use them."""

import os
import re
import subprocess
import sys
from typing import Dict, Mapping

import numpy as np
import tensorflow as tf


def saved_model_cli() -> str:
  """`saved_model_cli` of this interpreter's environment."""
  return os.path.join(os.path.dirname(sys.executable), 'saved_model_cli')


def cli_run(export_dir: str, signature: str,
            inputs: Mapping[str, np.ndarray]) -> np.ndarray:
  """`saved_model_cli run` of one signature; the numbers it printed."""
  # Bytes (serialized tf.Examples) as bytes literals, the rest as str.
  exprs = ';'.join(
      f'{k}={[x if isinstance(x, bytes) else str(x) for x in v.tolist()]!r}'
      for k, v in inputs.items())
  done = subprocess.run(
      [saved_model_cli(), 'run', '--dir', export_dir, '--tag_set', 'serve',
       '--signature_def', signature, '--input_exprs', exprs],
      capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-2000:]
  numbers = re.findall(r'-?\d+\.\d+(?:e[-+]?\d+)?', done.stdout)
  return np.array([float(x) for x in numbers], np.float32)


def session_answers(export_dir: str, signature: str,
                    inputs: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
  """One signature in a TF1 session loader (TF Serving's path)."""
  with tf.Graph().as_default() as graph, tf.compat.v1.Session(
      graph=graph) as session:
    meta_graph = tf.compat.v1.saved_model.load(
        session, [tf.saved_model.SERVING], export_dir)
    definition = meta_graph.signature_def[signature]
    return session.run(
        {k: v.name for k, v in definition.outputs.items()},
        {definition.inputs[k].name: v for k, v in inputs.items()})


def fine_tune_hub_module(hub_dir: str, inputs: Mapping[str, np.ndarray],
                         steps: int = 3):
  """Fine-tunes the {"train"} tag set as a TF1 consumer does; (values
  before and after by variable name, regularization losses, update ops)."""
  import tensorflow_hub as hub
  with tf.Graph().as_default():
    module = hub.Module(hub_dir, trainable=True, tags={'train'})
    output = module({k: tf.constant(v.tolist()) for k, v in inputs.items()})
    regularization = tf.compat.v1.losses.get_regularization_losses()
    updates = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
    loss = tf.reduce_sum(tf.square(output - 1.0))
    if regularization:
      loss += tf.add_n(regularization)
    with tf.control_dependencies(updates):
      train = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(loss)
    names = {v.name: v for v in module.variables}
    with tf.compat.v1.Session() as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.tables_initializer()])
      before = session.run(names)
      for _ in range(steps):
        session.run(train)
      after = session.run(names)
  return before, after, regularization, updates


def fit_keras_layer(serving_dir: str, inputs: Mapping[str, np.ndarray]):
  """hub.KerasLayer(trainable=True) of the serving export in a Keras model,
  fitted one epoch; (trainable values before, after)."""
  import tensorflow_hub as hub
  layer = hub.KerasLayer(serving_dir, trainable=True)
  features = {k: tf.keras.Input([], dtype=tf.string, name=k) for k in inputs}
  # [B, d] outputs, or one number per row ([B]) as [B, 1].
  flat = tf.keras.layers.Reshape((-1,))(layer(features))
  model = tf.keras.Model(features, tf.keras.layers.Dense(1)(flat))
  model.compile(optimizer=tf.keras.optimizers.SGD(0.5), loss='mse')
  before = [v.numpy().copy() for v in layer.trainable_variables]
  data = {k: tf.constant(v.tolist()) for k, v in inputs.items()}
  model.fit(data, tf.ones([len(next(iter(inputs.values()))), 1]), epochs=2,
            verbose=0)
  return before, [v.numpy() for v in layer.trainable_variables], layer
