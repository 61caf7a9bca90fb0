"""Both exports of a module file's model, load-checked before they land.

1. restore the Model on CPU with its own module (`<model>/user_module.py`):
   tables into `TPUEmbeddingForServing(optimizer=None)`, the dense model
   beside them; build the serving model (every signature on sample inputs)
   and check every variable came from the checkpoint;
2. the serving SavedModel (`tpu_embeddings.models.serving_model`): the
   module's signatures plus `examples`, vocabulary assets, warm-up requests
   (one per signature), and a reusable `__call__` for `hub.KerasLayer`;
3. the TF1 Hub module (`model_hub_export`), read from the same checkpoint;
4. a fresh Python process loads each from disk and checks it answers the
   sample inputs as the restored model does (`model_canary`), the serving
   one also through a TF1 session loader with its warm-up requests;
5. only then each moves into its artifact URI (the SavedModel into
   `Format-Serving/`).
"""

import os
import shutil
from typing import Dict, List

import numpy as np
import tensorflow as tf

from components.exporter import fresh_process
from components.exporter import model_hub_export
from components.exporter import staging
from components.exporter import warmup
from components.exporter.model_canary import ModelCanary
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.core import file_system
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


def _write_serving(serving: serving_model.ServingModel, export_dir: str):
  serving.trace_reusable()
  tf.saved_model.save(serving, export_dir, signatures=serving.signatures())
  warmup.write(export_dir, [(name, _as_request(inputs)) for name, inputs in
                            serving.sample_inputs().items()])


def _build(model_uri: str, module, stages: List[str], checker):
  """Writes both exports into the stages, each handed to the checker."""
  restored = model_restore.restore(model_uri, module)
  vocabularies = os.path.join(stages[0], 'vocabularies')
  os.makedirs(vocabularies)
  files = restored.write_vocabularies(vocabularies)
  with staging.phase('restore and build'):
    serving = restored.serving_model(files)
    restored.check_matched()
  canary = canary_of(serving, module)
  serving_dir, hub_dir = (os.path.join(s, 'export') for s in stages)
  with staging.phase('serving export'):
    _write_serving(serving, serving_dir)
  checker.submit('model_serving', serving_dir, canary)
  with staging.phase('hub export'):
    model_hub_export.export_hub_module(restored, files, hub_dir)
  checker.submit('model_hub', hub_dir, canary)
  return serving_dir, hub_dir


def export_model_module(model_uri: str, serving_uri: str, hub_uri: str,
                        module, load_check_timeout_seconds: float = (
                            fresh_process.DEFAULT_TIMEOUT_SECONDS)) -> None:
  """Writes both exports of the module file's Model at `model_uri`,
  load-checked; the SavedModel lands in
  `serving_contract.serving_model_path(serving_uri)`."""
  stages: List[str] = []
  checker = None
  try:
    stages += [file_system.staging_dir(uri, 'exporting')
               for uri in (serving_uri, hub_uri)]
    # Imports TensorFlow while this process restores and exports.
    checker = fresh_process.FreshProcess(load_check_timeout_seconds)
    serving_dir, hub_dir = _build(model_uri, module, stages, checker)
    with staging.phase('load check (rest)'):
      checker.wait()
    staging.move_into_output(serving_dir, serving_uri,
                             serving_contract.SERVING_MODEL_DIR)
    staging.move_into_output(hub_dir, hub_uri)
  finally:
    if checker is not None:
      checker.close()
    for path in stages:
      shutil.rmtree(path, ignore_errors=True)
