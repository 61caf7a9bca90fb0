"""Loads a serving export the way one of its clients does, in this process.

    python -m tests.support.serving_clients WAY[,WAY] EXPORT_DIR OUT_DIR

WAY is `saved_model` or `session`; both in one process, one after the other,
cost one interpreter and one TensorFlow import instead of two.

`saved_model` is `tf.saved_model.load` and its signatures; `session` is
`tf.compat.v1.saved_model.load` in a `tf.compat.v1.Session` (TF Serving's and
`saved_model_cli run`'s path: the init op once, then one `Session.run` per
request). Each signature is called with `INPUTS` twice, and the second answers
are written to OUT_DIR/<way>.npz as `<signature>/<output>`.
"""

import os
import sys

import numpy as np

WAYS = ('saved_model', 'session')
INPUTS = {
    'lookup': {'tokens': ['cat', 'nope', '', 'é']},
    'serving_default': {'sentences': ['cat cat', '', 'the nope',
                                      '  sat\ton mat ']},
    'neighbors': {'tokens': ['cat', 'nope'], 'k': 3},
}


def saved_model_cli_exprs(signature: str) -> str:
  """`INPUTS[signature]` as `saved_model_cli run --input_exprs`."""
  return ';'.join(f'{name}={value!r}'
                  for name, value in INPUTS[signature].items())


def _answer_with_saved_model(export_dir: str):
  import tensorflow as tf
  loaded = tf.saved_model.load(export_dir)
  answers = {}
  for _ in range(2):
    for signature, inputs in INPUTS.items():
      out = loaded.signatures[signature](
          **{name: tf.constant(value) for name, value in inputs.items()})
      answers.update({f'{signature}/{k}': v.numpy() for k, v in out.items()})
  return answers


def _answer_in_a_session(export_dir: str):
  import tensorflow as tf
  answers = {}
  with tf.Graph().as_default() as graph, tf.compat.v1.Session(
      graph=graph) as session:
    meta_graph = tf.compat.v1.saved_model.load(
        session, [tf.saved_model.SERVING], export_dir)
    for _ in range(2):
      for signature, inputs in INPUTS.items():
        definition = meta_graph.signature_def[signature]
        out = session.run(
            {k: v.name for k, v in definition.outputs.items()},
            {definition.inputs[k].name: v for k, v in inputs.items()})
        answers.update({f'{signature}/{k}': v for k, v in out.items()})
  return answers


def main(argv) -> int:
  ways, export_dir, out_dir = argv
  answer = {'saved_model': _answer_with_saved_model,
            'session': _answer_in_a_session}
  for way in ways.split(','):
    np.savez(os.path.join(out_dir, f'{way}.npz'), **answer[way](export_dir))
  return 0


def answers(out_dir: str, ways=WAYS):
  """{way: {"<signature>/<output>": answer}} that `main` wrote."""
  return {way: dict(np.load(os.path.join(out_dir, f'{way}.npz'),
                            allow_pickle=True)) for way in ways}


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
