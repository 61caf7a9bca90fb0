"""Artifact types of this project that TFX does not define."""

from tfx.types import artifact
from tfx.types import system_artifacts


class Vocabulary(artifact.Artifact):
  """Token vocabulary: `vocabulary.tsv` (see
  tpu_embeddings/artifacts/vocabulary_file.py)."""
  # `<module>.<Class>` importable by that path (components/__init__.py):
  # Kubeflow V2 compiles a custom type's name into its schema title and
  # imports the class from the title inside the container.
  TYPE_NAME = 'components.Vocabulary'
  TYPE_ANNOTATION = system_artifacts.Dataset
