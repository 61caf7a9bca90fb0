"""TFX component `VocabularyGen` (node id `Vocabulary`): token counts of the
Examples' train split, the `Vocabulary` artifact."""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_beam_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components import keys
from components.artifact_types import Vocabulary
from components.vocabulary import executor
from components.vocabulary.config import VocabularyConfig
from tpu_embeddings.core import settings


class VocabularySpec(types.ComponentSpec):
  PARAMETERS = {
      settings.CONFIG_KEY: ExecutionParameter(type=str),
  }
  INPUTS = {
      keys.EXAMPLES: ChannelParameter(type=standard_artifacts.Examples),
  }
  OUTPUTS = {
      keys.VOCABULARY: ChannelParameter(type=Vocabulary),
  }


class VocabularyGen(base_beam_component.BaseBeamComponent):
  """Counts tokens with Beam; keeps those with count >= `min_count`, at most
  `max_tokens` (0 = no cap), ordered by count desc then token.

  `config` is a `VocabularyConfig`; `**settings` override its fields by name.
  """

  SPEC_CLASS = VocabularySpec
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

  def __init__(self, examples: types.BaseChannel,
               config: Optional[VocabularyConfig] = None,
               **settings_by_name):
    config = (config or VocabularyConfig()).replace(**settings_by_name)
    super().__init__(spec=VocabularySpec(
        examples=examples, config=config.to_json(),
        vocabulary=types.Channel(type=Vocabulary)))
