"""Artifact types of this project that TFX does not define."""

from tfx.types import artifact
from tfx.types import system_artifacts


class Vocabulary(artifact.Artifact):
  """Token vocabulary: `vocabulary.tsv` (see components/vocabulary_file.py)."""
  TYPE_NAME = 'EmbeddingVocabulary'
  TYPE_ANNOTATION = system_artifacts.Dataset
