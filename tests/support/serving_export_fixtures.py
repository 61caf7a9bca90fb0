"""The small serving export the tests of tpu_embeddings/exports/table_serving.py
share: a TPU-format checkpoint of `TOKENS`, exported once per test module."""

from tests.support import artifact_fixtures
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.exports import table_serving
from tpu_embeddings.models.skipgram_features import skipgram_spec

TOKENS = ['the', 'cat', 'sat', 'on', 'mat', 'é']


def export(root):
  """Writes `<root>/model` and exports it to `<root>/serving`.

  Returns:
    (the checkpoint's table, the export directory).
  """
  model_uri = str(root / 'model')
  artifact_fixtures.write_tpu_format_model(
      model_uri, TOKENS, spec=skipgram_spec(dim=8, optimizer='adam'), seed=3)
  restored = checkpoint_restore.restore_for_serving(model_uri)
  export_dir = str(root / 'serving')
  table_serving.export_serving_model(restored, export_dir)
  return restored.table_numpy('tokens'), export_dir
