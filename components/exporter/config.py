"""ExporterConfig: how the Hub module is built from the trained table."""

import dataclasses

from tpu_embeddings.core import settings


@dataclasses.dataclass(frozen=True)
class ExporterConfig(settings.Settings):
  """Settings of EmbeddingExporter.

  Attributes:
    num_oov_buckets: zero rows appended to the Hub module's table for OOV
      tokens.
    l2_regularization: strength of the L2 loss the Hub module's {"train"} tag
      set puts into REGULARIZATION_LOSSES for fine-tuning.
  """
  WHAT = 'EmbeddingExporter'

  # Each is a row of the Hub module's table: 100,000 is more than a hashed
  # OOV space needs, while a million rows of dim 8192 would be 32 GB.
  num_oov_buckets: int = settings.bounded(1, 1, 100_000)
  # A weight on the sum of squares of the table: at 1 the fine-tuning loss
  # is already dominated by it.
  l2_regularization: float = settings.bounded(1e-6, 0.0, 1.0)

