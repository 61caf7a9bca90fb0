"""TFX component `EmbeddingPusher`: versioned push of both exports if blessed."""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components import push_layout
from components.pusher import executor


class EmbeddingPusherSpec(types.ComponentSpec):
  PARAMETERS = {
      executor.PUSH_ROOT_KEY: ExecutionParameter(type=str),
      executor.KEEP_VERSIONS_KEY: ExecutionParameter(type=int, optional=True),
  }
  INPUTS = {
      executor.SERVING_MODEL_KEY: ChannelParameter(
          type=standard_artifacts.Model),
      executor.HUB_MODULE_KEY: ChannelParameter(type=standard_artifacts.Model),
      executor.MODEL_BLESSING_KEY: ChannelParameter(
          type=standard_artifacts.ModelBlessing),
  }
  OUTPUTS = {
      executor.PUSHED_SERVING_KEY: ChannelParameter(
          type=standard_artifacts.PushedModel),
      executor.PUSHED_HUB_KEY: ChannelParameter(
          type=standard_artifacts.PushedModel),
  }


class EmbeddingPusher(base_component.BaseComponent):
  """Publishes `serving_model` and `hub_module` under `push_root` if blessed.

  Both land as the same integer version, `<push_root>/serving/<v>` (TF Serving
  layout) and `<push_root>/hub/<v>`, each with a `manifest.json`; the newest
  `keep_versions` versions are kept (0 = all). Not blessed: nothing is copied
  and both outputs get `pushed=0`.
  """

  SPEC_CLASS = EmbeddingPusherSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self,
               serving_model: types.BaseChannel,
               hub_module: types.BaseChannel,
               model_blessing: types.BaseChannel,
               push_root: str,
               keep_versions: int = 0,
               pushed_serving: Optional[types.BaseChannel] = None,
               pushed_hub: Optional[types.BaseChannel] = None):
    if isinstance(push_root, str):
      push_layout.check_root(push_root)
    if isinstance(keep_versions, bool) or not isinstance(
        keep_versions, int) or keep_versions < 0:
      raise ValueError(f'EmbeddingPusher: keep_versions must be an integer '
                       f'>= 0, got {keep_versions!r}')
    super().__init__(spec=EmbeddingPusherSpec(
        serving_model=serving_model,
        hub_module=hub_module,
        model_blessing=model_blessing,
        push_root=push_root,
        keep_versions=keep_versions,
        pushed_serving=pushed_serving or types.Channel(
            type=standard_artifacts.PushedModel),
        pushed_hub=pushed_hub or types.Channel(
            type=standard_artifacts.PushedModel)))
