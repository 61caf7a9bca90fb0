"""Exports loaded into a TF1 graph of their own, in this process.

These are the loaders of TF Serving and `saved_model_cli run` (a session
loader of the serving SavedModel) and of TF1 consumers (`hub.Module` in a
graph), and the TF2 loaders (`tf.saved_model.load`, `hub.load`) run in a
graph. A graph's session owns its devices and their resources, so nothing
it loads is shared with this process's eager context (the tables the
exporter restored and the resources it created while exporting), and
closing the session frees what it loaded. The exporter checks exports this
way in its own process (`export`).
"""

import contextlib
from typing import Callable, Dict, Iterator, List, Mapping, Tuple

import numpy as np

from tpu_embeddings.exports.load_errors import LoadCheckError
from tpu_embeddings.exports.load_errors import reason

Arrays = Dict[str, np.ndarray]


def _session_config():
  import tensorflow as tf
  # One op at a time: a vocabulary's resources are then built one after the
  # other (a 10M-token vocabulary costs 0.35 GB less at its peak).
  return tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1)


@contextlib.contextmanager
def serving_session(export_dir: str,
                    what: str) -> Iterator[Callable[..., Arrays]]:
  """Yields `run(signature, inputs) -> {output: ndarray}` over the serving
  SavedModel loaded by a session loader (its init op run once, then each
  call a `Session.run`, as TF Serving runs requests).

  Args:
    export_dir: the serving SavedModel.
    what: names the export's kind in every LoadCheckError ('serving').
  """
  import tensorflow as tf
  with tf.Graph().as_default() as graph, tf.compat.v1.Session(
      graph=graph, config=_session_config()) as session:
    try:
      meta_graph = tf.compat.v1.saved_model.load(
          session, [tf.saved_model.SERVING], export_dir)
    except Exception as e:
      raise LoadCheckError(f'{what} export: session loader: '
                           f'{type(e).__name__}: {reason(e)}') from e

    def run(name: str, inputs: Mapping[str, np.ndarray]) -> Arrays:
      if name not in meta_graph.signature_def:
        raise LoadCheckError(
            f'{what} export lacks signature {name!r} in a session')
      signature = meta_graph.signature_def[name]
      try:
        return session.run(
            {k: v.name for k, v in signature.outputs.items()},
            {signature.inputs[k].name: v for k, v in inputs.items()})
      except Exception as e:
        raise LoadCheckError(f'{what} {name} in a session: '
                             f'{type(e).__name__}: {reason(e)}') from e

    yield run


@contextlib.contextmanager
def loaded_session(export_dir: str, what: str,
                   loader: Callable[[str], object]
                   ) -> Iterator[Tuple[Callable[..., Arrays], List[str]]]:
  """Yields `(run, signatures)` over the export loaded by `loader` (a TF2
  loader: `tf.saved_model.load`, `hub.load`) into a graph of its own.

  The loader reads the same files as in eager mode, while its variables and
  tables live in one session, apart from this process's eager state, and
  go when it closes. `run(signature, inputs) -> {output: ndarray}` calls a
  loaded signature; `signatures` names them.

  Args:
    export_dir: the export.
    what: names the export and its loader in every LoadCheckError.
    loader: `loader(export_dir)` -> an object with `.signatures`.
  """
  import tensorflow as tf
  with tf.Graph().as_default() as graph, tf.compat.v1.Session(
      graph=graph, config=_session_config()) as session:
    try:
      loaded = loader(export_dir)
      # Variables restored by the checkpoint's object graph, tables by their
      # restored initializers; a TF1 SavedModel's variables that its loader
      # could not lift out of the function are in the collection.
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.tables_initializer()])
      session.run(tf.compat.v1.get_collection('saved_model_initializers'))
    except Exception as e:
      raise LoadCheckError(f'{what}: {type(e).__name__}: {reason(e)}') from e

    def run(name: str, inputs: Mapping[str, np.ndarray]) -> Arrays:
      if name not in loaded.signatures:
        raise LoadCheckError(f'{what} lacks signature {name!r}')
      function = loaded.signatures[name]
      specs = function.structured_input_signature[1]
      try:
        return session.run(function(**{
            k: _constant(v, specs[k].dtype if k in specs else None)
            for k, v in inputs.items()}))
      except Exception as e:
        raise LoadCheckError(f'{what} {name}: {type(e).__name__}: '
                             f'{reason(e)}') from e

    yield run, sorted(loaded.signatures)


def _constant(value, dtype=None):
  """`value` as a constant (of `dtype`, as a signature converts it)."""
  import tensorflow as tf
  if isinstance(value, (list, tuple)):
    # Not through numpy: its string arrays drop trailing NUL characters.
    return tf.constant(list(value), dtype)
  value = np.asarray(value)
  return tf.constant(value.tolist() if value.dtype == object else value,
                     dtype)


def hub_module_outputs(export_dir: str,
                       calls: Mapping[str, Mapping[str, np.ndarray]]
                       ) -> Dict[str, Arrays]:
  """{signature: {output: ndarray}} of the TF1 Hub module at `export_dir`
  called as a TF1 consumer calls it (`hub.Module` in a graph, tags {}),
  once per signature of `calls` ({signature: {input: value}})."""
  import tensorflow as tf
  import tensorflow_hub as hub
  with tf.Graph().as_default() as graph:
    try:
      module = hub.Module(export_dir)
      outputs = {name: module({k: _constant(v) for k, v in inputs.items()},
                              signature=name, as_dict=True)
                 for name, inputs in calls.items()}
    except Exception as e:
      raise LoadCheckError(f'hub export: hub.Module: {type(e).__name__}: '
                           f'{reason(e)}') from e
    with tf.compat.v1.Session(graph=graph,
                              config=_session_config()) as session:
      try:
        session.run([tf.compat.v1.global_variables_initializer(),
                     tf.compat.v1.tables_initializer()])
        return session.run(outputs)
      except Exception as e:
        raise LoadCheckError(f'hub export in a session: '
                             f'{type(e).__name__}: {reason(e)}') from e
