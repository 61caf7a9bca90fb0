"""Running the Vocabulary executor on Examples a test wrote."""

import os
from typing import Optional

from tfx.types import standard_artifacts

from components import keys
from components.artifact_types import Vocabulary as VocabularyArtifact
from components.vocabulary import executor
from components.vocabulary.config import VocabularyConfig


def run(root, span: Optional[int] = None, **config) -> VocabularyArtifact:
  """Counts `<root>/examples` into `<root>/vocabulary`; its artifact."""
  examples = standard_artifacts.Examples()
  examples.uri = os.path.join(str(root), 'examples')
  if span is not None:
    examples.set_int_custom_property('span', span)
  vocab = VocabularyArtifact()
  vocab.uri = os.path.join(str(root), 'vocabulary')
  os.makedirs(vocab.uri, exist_ok=True)
  executor.Executor().Do(
      {keys.EXAMPLES: [examples]}, {keys.VOCABULARY: [vocab]},
      {'config': VocabularyConfig(**config).to_json()})
  return vocab
