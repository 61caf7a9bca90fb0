"""The load check of a module's exports: they answer as the restored model
does.

A `ModelCanary` holds, for every signature of the serving model, sample
inputs and the outputs the restored model gave them in the exporting
process, and the same for the Hub call. A fresh process (`fresh_process`)
loads each export from disk with its kind's loader (`export_kinds`) and
compares: the serving SavedModel through `tf.saved_model.load` and through a
TF1 session loader (TF Serving's and `saved_model_cli run`'s path) with its
warm-up requests replayed, the Hub module through
`hub.load(...).signatures['default']`.
"""

import base64
import dataclasses
import json
from typing import Dict

import numpy as np

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.exports import graph_loaders
from tpu_embeddings.exports import warmup
from tpu_embeddings.exports.load_errors import LoadCheckError

RTOL, ATOL = 1e-5, 1e-5
# Key of the Hub call's group in a saved canary.
_HUB_CALL = 'hub_call'

Arrays = Dict[str, np.ndarray]


def _as_bytes(value) -> bytes:
  return value if isinstance(value, bytes) else str(value).encode('utf-8')


def _bytes_array(saved: np.ndarray) -> np.ndarray:
  """An object array of bytes from its saved base64 JSON list."""
  return np.array([base64.b64decode(v) for v in json.loads(str(saved))],
                  dtype=object)


@dataclasses.dataclass
class ModelCanary:
  """{signature: (inputs, outputs)}, and the Hub call's (inputs, outputs)."""
  FORMAT = 'module'

  signatures: Dict[str, Dict[str, Arrays]]
  hub: Dict[str, Arrays]

  def save(self, path: str):
    arrays, index = {}, {'signatures': {}, _HUB_CALL: {}}
    def put(group):
      names = {}
      for part, values in group.items():
        names[part] = {}
        for key, value in values.items():
          slot = f'a{len(arrays)}'
          # Strings as base64 in JSON: numpy string arrays drop trailing
          # NULs, and a serialized tf.Example is bytes, not UTF-8 text.
          if np.asarray(value).dtype == object:
            arrays[slot] = np.array(json.dumps(
                [base64.b64encode(_as_bytes(v)).decode('ascii')
                 for v in np.asarray(value).tolist()]))
            names[part][key] = [slot, 'bytes']
          else:
            arrays[slot] = np.asarray(value)
            names[part][key] = [slot, 'array']
      return names
    for name, group in self.signatures.items():
      index['signatures'][name] = put(group)
    index[_HUB_CALL] = put(self.hub)
    np.savez(path, index=np.array(json.dumps(index)), **arrays)

  @classmethod
  def load(cls, path: str) -> 'ModelCanary':
    with np.load(path) as d:
      index = json.loads(str(d['index']))
      def get(names):
        return {part: {key: (_bytes_array(d[slot]) if how == 'bytes'
                             else d[slot])
                       for key, (slot, how) in keys.items()}
                for part, keys in names.items()}
      return cls({n: get(g) for n, g in index['signatures'].items()},
                 get(index[_HUB_CALL]))


def compare(what: str, got: Arrays, want: Arrays):
  for key, value in want.items():
    if key not in got:
      raise LoadCheckError(f'{what}: no output {key!r} (it gives '
                           f'{sorted(got)})')
    found = np.asarray(got[key])
    if found.shape != value.shape:
      raise LoadCheckError(f'{what} {key}: shape {found.shape}, expected '
                           f'{value.shape}')
    if not np.allclose(found, value, rtol=RTOL, atol=ATOL):
      worst = float(np.max(np.abs(found - value)))
      raise LoadCheckError(f'{what} {key}: differs from the restored model '
                           f'by up to {worst}')


def _tensors(inputs: Arrays):
  import tensorflow as tf
  return {k: tf.constant(v.tolist() if v.dtype == object else v)
          for k, v in inputs.items()}


def check_serving(export_dir: str, canary: ModelCanary):
  """Every signature through `tf.saved_model.load` and a session loader;
  the warm-up requests in the session too."""
  loaded = export_kinds.SERVING.loader(export_dir)
  for name, group in canary.signatures.items():
    if name not in loaded.signatures:
      raise LoadCheckError(f'serving export lacks signature {name!r}')
    out = loaded.signatures[name](**_tensors(group['inputs']))
    compare(f'serving {name}', {k: v.numpy() for k, v in out.items()},
            group['outputs'])
  del loaded
  check_serving_in_a_session(export_dir, canary)


def check_serving_in_a_session(export_dir: str, canary: ModelCanary):
  """Every signature and the warm-up requests through a session loader, in
  this process (`graph_loaders`)."""
  requests = warmup.read(export_dir)
  with graph_loaders.serving_session(export_dir, 'serving') as run:
    for name, group in canary.signatures.items():
      compare(f'serving {name} (session)', run(name, group['inputs']),
              group['outputs'])
    for name, inputs in requests:
      run(name, inputs)


def check_hub(export_dir: str, canary: ModelCanary):
  """The Hub module's `default` signature, loaded with `hub.load`."""
  loaded = export_kinds.HUB.loader(export_dir)
  out = loaded.signatures['default'](**_tensors(canary.hub['inputs']))
  compare('hub default', {k: v.numpy() for k, v in out.items()},
          canary.hub['outputs'])


def check_hub_in_a_graph(export_dir: str, canary: ModelCanary):
  """The Hub module's `default` signature through `hub.Module` in a TF1
  graph, in this process (`graph_loaders`)."""
  outputs = graph_loaders.hub_module_outputs(
      export_dir, {'default': canary.hub['inputs']})
  compare('hub default (hub.Module)', outputs['default'],
          canary.hub['outputs'])


# {export kind: its check}: every registered kind has one.
CHECKS = {export_kinds.SERVING.name: check_serving,
          export_kinds.HUB.name: check_hub}
# {export kind: its check through graph loaders only, in this process}.
GRAPH_CHECKS = {export_kinds.SERVING.name: check_serving_in_a_session,
                export_kinds.HUB.name: check_hub_in_a_graph}
