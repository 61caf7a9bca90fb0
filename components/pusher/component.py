"""TFX component `EmbeddingPusher`: versioned push of both exports if blessed.
"""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components import keys
from components.pusher import executor
from components.pusher.config import PusherConfig
from tpu_embeddings.core import settings
from tpu_embeddings.push_root import layout as push_layout


class EmbeddingPusherSpec(types.ComponentSpec):
  PARAMETERS = {
      keys.PUSH_ROOT: ExecutionParameter(type=str),
      settings.CONFIG_KEY: ExecutionParameter(type=str),
  }
  # One input and one pushed channel per export kind (executor.CHANNELS).
  INPUTS = {
      **{exported: ChannelParameter(type=standard_artifacts.Model)
         for exported, _ in executor.CHANNELS.values()},
      keys.MODEL_BLESSING: ChannelParameter(
          type=standard_artifacts.ModelBlessing),
  }
  OUTPUTS = {
      pushed: ChannelParameter(type=standard_artifacts.PushedModel)
      for _, pushed in executor.CHANNELS.values()
  }


class EmbeddingPusher(base_component.BaseComponent):
  """Publishes `serving_model` and `hub_module` under `push_root` if blessed.

  Both land as the same integer version, `<push_root>/serving/<v>` (TF Serving
  layout) and `<push_root>/hub/<v>`, each with a `manifest.json`; the newest
  `config.keep_versions` versions are kept (0 = all). Not blessed: nothing is
  copied and both outputs get `pushed=0`. Blessed against a served version
  that is no longer the served one (the blessing's report says which):
  refused, nothing copied (tpu_embeddings/push_root/served.py). `config` is
  a `PusherConfig`; `**settings` override its fields by name.
  """

  SPEC_CLASS = EmbeddingPusherSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self,
               serving_model: types.BaseChannel,
               hub_module: types.BaseChannel,
               model_blessing: types.BaseChannel,
               push_root: str,
               config: Optional[PusherConfig] = None,
               **settings_by_name):
    if isinstance(push_root, str):
      push_layout.check_root(push_root)
    config = (config or PusherConfig()).replace(**settings_by_name)
    super().__init__(spec=EmbeddingPusherSpec(
        serving_model=serving_model,
        hub_module=hub_module,
        model_blessing=model_blessing,
        push_root=push_root,
        config=config.to_json(),
        **{pushed: types.Channel(type=standard_artifacts.PushedModel)
           for _, pushed in executor.CHANNELS.values()}))
