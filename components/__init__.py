"""Custom TFX components of the embedding pipeline."""


def __getattr__(name):
  # `components.Vocabulary` is the Vocabulary artifact's type name; Kubeflow
  # imports the class by it. Loaded lazily so `import components.x` stays
  # light.
  if name == 'Vocabulary':
    from components.artifact_types import Vocabulary
    return Vocabulary
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
