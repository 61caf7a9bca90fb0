"""TFX component `EmbeddingExporter`: a serving SavedModel and a TF1 Hub module."""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components.exporter import executor
from components.exporter import hub_export


class EmbeddingExporterSpec(types.ComponentSpec):
  PARAMETERS = {
      executor.NUM_OOV_BUCKETS_KEY: ExecutionParameter(type=int,
                                                       optional=True),
      executor.L2_REGULARIZATION_KEY: ExecutionParameter(type=float,
                                                         optional=True),
  }
  INPUTS = {
      executor.MODEL_KEY: ChannelParameter(type=standard_artifacts.Model),
  }
  OUTPUTS = {
      executor.SERVING_MODEL_KEY: ChannelParameter(
          type=standard_artifacts.Model),
      executor.HUB_MODULE_KEY: ChannelParameter(type=standard_artifacts.Model),
  }


class EmbeddingExporter(base_component.BaseComponent):
  """Exports the trainer's `model` as `serving_model` and `hub_module`.

  Both are built on CPU from the checkpoint restored with
  `TPUEmbeddingForServing(..., optimizer=None)`, load-checked in a fresh
  process, and carry the string custom property `source_model` (the input
  Model's URI).

  Args:
    model: the trainer's `Model` channel.
    num_oov_buckets: zero rows appended to the Hub module's table for OOV
      tokens.
    l2_regularization: strength of the L2 loss the Hub module's {"train"} tag
      set puts into REGULARIZATION_LOSSES for fine-tuning.
  """

  SPEC_CLASS = EmbeddingExporterSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self,
               model: types.BaseChannel,
               num_oov_buckets: int = hub_export.DEFAULT_NUM_OOV_BUCKETS,
               l2_regularization: float = (
                   hub_export.DEFAULT_L2_REGULARIZATION),
               serving_model: Optional[types.BaseChannel] = None,
               hub_module: Optional[types.BaseChannel] = None):
    if isinstance(num_oov_buckets, bool) or not isinstance(
        num_oov_buckets, int) or num_oov_buckets < 1:
      raise ValueError(f'EmbeddingExporter: num_oov_buckets must be an '
                       f'integer >= 1, got {num_oov_buckets!r}')
    if isinstance(l2_regularization, bool) or not isinstance(
        l2_regularization, (int, float)) or not (
            0 <= l2_regularization < float('inf')):
      raise ValueError(f'EmbeddingExporter: l2_regularization must be a '
                       f'finite number >= 0, got {l2_regularization!r}')
    super().__init__(spec=EmbeddingExporterSpec(
        model=model,
        num_oov_buckets=num_oov_buckets,
        l2_regularization=float(l2_regularization),
        serving_model=serving_model or types.Channel(
            type=standard_artifacts.Model),
        hub_module=hub_module or types.Channel(
            type=standard_artifacts.Model)))
