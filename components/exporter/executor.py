"""Executor of `EmbeddingExporter`: the TFX side of `tpu_embeddings.exports`.

It reads the input artifacts and the config, loads the module the Model was
trained with (`components.module_file.from_model`) and hands both to
`tpu_embeddings.exports.export.export_model`, the one export path for every
model: each export kind (tpu_embeddings/artifacts/export_kinds.py) is
written, load-checked and only then moved into its output artifact
(`OUTPUTS`).
"""

from typing import Any, Dict, List, Optional

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import keys
from components import module_file
from components.exporter.config import ExporterConfig
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.exports import export

# {export kind: the output channel that carries it}.
OUTPUTS = {export_kinds.SERVING.name: keys.SERVING_MODEL,
           export_kinds.HUB.name: keys.HUB_MODULE}


def _blessed(blessings: List[types.Artifact]) -> bool:
  return not blessings or all(
      b.get_int_custom_property(keys.BLESSED) == 1 for b in blessings)


class Executor(base_executor.BaseExecutor):
  """Exports `model` as every export kind, unless the given
  `model_blessing` is not blessed."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> Optional[Any]:
    self._log_startup(input_dict, output_dict, exec_properties)
    model = artifact_utils.get_single_instance(input_dict[keys.MODEL])
    outputs = {kind: artifact_utils.get_single_instance(output_dict[key])
               for kind, key in OUTPUTS.items()}
    config = ExporterConfig.from_exec_properties(exec_properties)
    blessings = input_dict.get(keys.MODEL_BLESSING) or []
    exported = _blessed(blessings)
    if exported:
      export.export_model(
          model.uri, {kind: a.uri for kind, a in outputs.items()},
          module_file.from_model(model.uri),
          export.ExportOptions(num_oov_buckets=config.num_oov_buckets,
                               l2_regularization=config.l2_regularization))
    else:
      logging.info('Model %s is not blessed (%s); nothing exported.',
                   model.uri, ', '.join(b.uri for b in blessings))
    for artifact in outputs.values():
      artifact.set_string_custom_property(keys.SOURCE_MODEL, model.uri)
      artifact.set_string_custom_property(keys.EXPORT_CONFIG,
                                          config.to_json())
      artifact.set_int_custom_property(keys.EXPORTED, int(exported))
