"""TFX component `Vocabulary`: token counts of the Examples' train split."""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_beam_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from tpu_embeddings.core import settings
from components.artifact_types import Vocabulary as VocabularyArtifact
from components.vocabulary import executor
from components.vocabulary.config import VocabularyConfig


class VocabularySpec(types.ComponentSpec):
  PARAMETERS = {
      settings.CONFIG_KEY: ExecutionParameter(type=str),
  }
  INPUTS = {
      executor.EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples),
  }
  OUTPUTS = {
      executor.VOCABULARY_KEY: ChannelParameter(type=VocabularyArtifact),
  }


class Vocabulary(base_beam_component.BaseBeamComponent):
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
        vocabulary=types.Channel(type=VocabularyArtifact)))
