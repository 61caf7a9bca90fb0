"""TFX component `Vocabulary`: token counts of the Examples' train split."""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_beam_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components.artifact_types import Vocabulary as VocabularyArtifact
from components.vocabulary import executor


class VocabularySpec(types.ComponentSpec):
  PARAMETERS = {
      executor.MIN_COUNT_KEY: ExecutionParameter(type=int),
      executor.MAX_TOKENS_KEY: ExecutionParameter(type=int),
      executor.SPLIT_KEY: ExecutionParameter(type=str),
  }
  INPUTS = {
      executor.EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples),
  }
  OUTPUTS = {
      executor.VOCABULARY_KEY: ChannelParameter(type=VocabularyArtifact),
  }


class Vocabulary(base_beam_component.BaseBeamComponent):
  """Counts tokens with Beam; keeps those with count >= `min_count`, at most
  `max_tokens` (0 = no cap), ordered by count desc then token."""

  SPEC_CLASS = VocabularySpec
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

  def __init__(self, examples: types.BaseChannel, min_count: int = 1,
               max_tokens: int = 0, split: str = 'train',
               vocabulary: Optional[types.BaseChannel] = None):
    if min_count < 1:
      raise ValueError(f'Vocabulary: min_count must be >= 1, got {min_count}')
    if max_tokens < 0:
      raise ValueError(f'Vocabulary: max_tokens must be >= 0, got {max_tokens}')
    super().__init__(spec=VocabularySpec(
        examples=examples, min_count=min_count, max_tokens=max_tokens,
        split=split,
        vocabulary=vocabulary or types.Channel(type=VocabularyArtifact)))
