"""The exports of a module's model through its own signatures and HUB call.

1. the Model is restored on CPU with its own module
   (`tpu_embeddings.models.model_restore`): tables into
   `TPUEmbeddingForServing(optimizer=None)`, the dense model beside them;
   the serving model is built (every signature on sample inputs) and every
   variable is checked to come from the checkpoint;
2. the serving SavedModel (`tpu_embeddings.models.serving_model`): the
   module's signatures plus `examples`, vocabulary assets, warm-up requests
   (one per signature), and a reusable `__call__` for `hub.KerasLayer`;
3. the TF1 Hub module (`module_hub`), read from the same checkpoint.

Its canary (`module_canary`) is every signature's sample inputs and what the
restored model answers them.
"""

import os
from typing import Dict

import numpy as np

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.exports import module_hub
from tpu_embeddings.exports import staging
from tpu_embeddings.exports import warmup
from tpu_embeddings.exports.module_canary import ModelCanary
from tpu_embeddings.models import model_restore
from tpu_embeddings.models import serving_model


def _as_request(inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
  return {k: np.array([x.encode('utf-8') if isinstance(x, str) else x
                       for x in v.tolist()], dtype=object)
          if v.dtype == object else v for k, v in inputs.items()}


def canary_of(serving: serving_model.ServingModel, module) -> ModelCanary:
  """Sample inputs of every signature and of the Hub call, and what the
  restored model answers."""
  inputs = serving.sample_inputs()
  signatures = serving.served()
  groups = {name: {'inputs': inputs[name],
                   'outputs': signatures[name](**inputs[name])}
            for name in signatures}
  hub_inputs = {f: inputs[serving_model.DEFAULT_SIGNATURE].get(f)
                for f in module.hub_features}
  for feature, values in hub_inputs.items():
    if values is None:  # a Hub feature the default signature does not take
      hub_inputs[feature] = np.array(['', '', ''], dtype=object)
  hub_out = serving(hub_inputs, training=False)
  hub_out = ({k: v.numpy() for k, v in hub_out.items()}
             if isinstance(hub_out, dict) else {'default': hub_out.numpy()})
  return ModelCanary(groups, {'inputs': hub_inputs, 'outputs': hub_out})


class ModuleSource:
  """A module's Model, restored, and written as each export kind.

  Attributes:
    canary: the load check's `module_canary.ModelCanary`.
    table_bytes: bytes of its tables and dense variables.
    writers: {export kind: write(export_dir)}.
    SELF_CONTAINED: False: the module's code may register ops or objects in
      the exporting process that a server lacks, so a fresh process checks
      its exports (`export`).
  """
  SELF_CONTAINED = False

  def __init__(self, model_uri: str, module, scratch_dir: str):
    """Restores the Model and builds its serving model; the vocabulary
    assets are written into `scratch_dir`."""
    self._restored = model_restore.restore(model_uri, module)
    self._files = self._restored.write_vocabularies(
        os.path.join(scratch_dir, 'vocabularies'))
    with staging.phase('restore and build'):
      self._serving = self._restored.serving_model(self._files)
      self._restored.check_matched()
    self.canary = canary_of(self._serving, module)
    self.table_bytes = sum(int(np.prod(v.shape)) * v.dtype.size
                           for v in self._serving.variables)
    self.writers = {export_kinds.SERVING.name: self._write_serving,
                    export_kinds.HUB.name: self._write_hub}

  def _write_serving(self, export_dir: str):
    self._serving.save(export_dir)
    warmup.write(export_dir, [
        (name, _as_request(inputs))
        for name, inputs in self._serving.sample_inputs().items()])

  def _write_hub(self, export_dir: str):
    module_hub.export_hub_module(self._restored, self._files, export_dir)
