"""TFX component `EmbeddingExporter`: a serving SavedModel and a TF1 Hub module.
"""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components import keys
from components.exporter import executor
from components.exporter.config import ExporterConfig
from tpu_embeddings.core import settings


class EmbeddingExporterSpec(types.ComponentSpec):
  PARAMETERS = {
      settings.CONFIG_KEY: ExecutionParameter(type=str),
  }
  INPUTS = {
      keys.MODEL: ChannelParameter(type=standard_artifacts.Model),
      keys.MODEL_BLESSING: ChannelParameter(
          type=standard_artifacts.ModelBlessing, optional=True),
  }
  # One output channel per export kind (executor.OUTPUTS).
  OUTPUTS = {key: ChannelParameter(type=standard_artifacts.Model)
             for key in executor.OUTPUTS.values()}


class EmbeddingExporter(base_component.BaseComponent):
  """Exports the trainer's `model` as `serving_model` and `hub_module`.

  Both are built on CPU from the checkpoint restored with
  `TPUEmbeddingForServing(..., optimizer=None)`, load-checked with the
  loaders of their consumers (`tpu_embeddings.exports.export`), and carry
  the string custom property `source_model` (the input Model's URI).
  `serving_model` holds its SavedModel in `Format-Serving/` (TFX's layout:
  `tfx.utils.path_utils.serving_model_path(uri)`, so stock Pusher,
  Evaluator and InfraValidator take it); `hub_module` holds the TF1 Hub
  module at its URI.

  Given a `model_blessing` that is not blessed, nothing is exported (as TFX's
  BulkInferrer does): both outputs stay empty with the int custom property
  `exported` 0. A refused model may hold values, such as NaN, that no export
  can be checked against.

  Args:
    model: the trainer's `Model` channel.
    model_blessing: optional; the validator's `ModelBlessing` channel.
    config: an `ExporterConfig`; `**settings` override its fields by name.
  """

  SPEC_CLASS = EmbeddingExporterSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self,
               model: types.BaseChannel,
               model_blessing: Optional[types.BaseChannel] = None,
               config: Optional[ExporterConfig] = None,
               **settings_by_name):
    config = (config or ExporterConfig()).replace(**settings_by_name)
    super().__init__(spec=EmbeddingExporterSpec(
        model=model,
        model_blessing=model_blessing,
        config=config.to_json(),
        **{key: types.Channel(type=standard_artifacts.Model)
           for key in executor.OUTPUTS.values()}))
