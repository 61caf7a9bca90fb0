"""Loads pushed exports the way TF Hub users do, in this process.

    python tests/support/hub_clients.py SERVING_DIR HUB_DIR OUT.npz

Runs with nothing but TensorFlow, tensorflow-hub and numpy (and tf-keras where
TensorFlow's own Keras is Keras 3), so that it also runs in a consumer's
environment on a newer TensorFlow. Writes `<client>/<output>` answers:

* `hub_load/default`, `hub_load/tokens`: `hub.load` of the TF1 Hub module and
  its two signatures;
* `hub_keras/default`: `hub.KerasLayer` on the Hub module's `default`
  signature;
* `serving_keras/default`: `hub.KerasLayer` on the serving SavedModel;
* `serving_fit/*`: that layer with `trainable=True` in a Keras model, fitted
  for a few steps: the loss before and after, and which table rows moved.
"""

import os
import sys

import numpy as np

UNKNOWN = 'not-a-token-of-any-vocabulary'
FIT_TARGETS = [1.0, -1.0, 2.0]


def inputs(serving_dir: str):
  """(sentences, tokens, fit sentences) from the export's own vocabulary
  asset (`assets/vocabulary.txt`, row order), with an unknown token mixed
  in."""
  with open(os.path.join(serving_dir, 'assets', 'vocabulary.txt'),
            encoding='utf-8') as f:
    a, b, c = [next(f).rstrip('\n') for _ in range(3)]
  sentences = [f'{a} {b}', f'{c} {UNKNOWN} {a}', UNKNOWN, '']
  tokens = [b, UNKNOWN, '']
  fit_sentences = [f'{a} {b}', f'{UNKNOWN} {c}', a]
  return sentences, tokens, fit_sentences


def _keras():
  """The Keras that hub.KerasLayer builds on: tf-keras where installed."""
  try:
    import tf_keras
    return tf_keras
  except ImportError:
    import tensorflow as tf
    return tf.keras


def hub_module_answers(hub_dir: str, sentences, tokens):
  import tensorflow as tf
  import tensorflow_hub as hub
  module = hub.load(hub_dir)
  layer = hub.KerasLayer(hub_dir, signature='default',
                         signature_outputs_as_dict=True)
  return {
      'hub_load/default': module.signatures['default'](
          sentences=tf.constant(sentences))['default'].numpy(),
      'hub_load/tokens': module.signatures['tokens'](
          tokens=tf.constant(tokens))['default'].numpy(),
      'hub_keras/default': layer(
          {'sentences': tf.constant(sentences)})['default'].numpy(),
  }


def serving_answers(serving_dir: str, sentences, fit_sentences):
  """KerasLayer on the serving export, then fine-tuned through it."""
  import tensorflow as tf
  import tensorflow_hub as hub
  keras = _keras()
  answers = {'serving_keras/default': hub.KerasLayer(serving_dir)(
      tf.constant(sentences)).numpy()}
  layer = hub.KerasLayer(serving_dir, trainable=True)
  sentences = keras.Input([], dtype=tf.string)
  model = keras.Model(sentences, keras.layers.Dense(
      1, kernel_initializer='ones')(layer(sentences)))
  model.compile(keras.optimizers.SGD(0.01), 'mse')
  before = layer.trainable_weights[0].numpy().copy()
  x, y = np.array(fit_sentences), np.array(FIT_TARGETS)
  history = model.fit(x, y, epochs=5, batch_size=len(x), verbose=0)
  moved = np.abs(layer.trainable_weights[0].numpy() - before).sum(axis=1) > 0
  answers.update({
      'serving_fit/trainable_weights': np.array(len(layer.trainable_weights)),
      'serving_fit/first_loss': np.array(history.history['loss'][0]),
      'serving_fit/last_loss': np.array(history.history['loss'][-1]),
      'serving_fit/moved_rows': np.flatnonzero(moved),
  })
  return answers


def main(argv) -> int:
  serving_dir, hub_dir, out = argv
  sentences, tokens, fit_sentences = inputs(serving_dir)
  answers = hub_module_answers(hub_dir, sentences, tokens)
  answers.update(serving_answers(serving_dir, sentences, fit_sentences))
  np.savez(out, **answers)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
