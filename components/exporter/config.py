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

  num_oov_buckets: int = 1
  l2_regularization: float = 1e-6

  def __post_init__(self):
    if isinstance(self.num_oov_buckets, bool):
      raise ValueError(f'{self.WHAT} parameter num_oov_buckets must be an '
                       f'integer >= 1, got {self.num_oov_buckets!r}')
    super().__post_init__()

  def validate(self):
    super().validate()
    self.check_int('num_oov_buckets', 1)
    if self.l2_regularization < 0:
      raise ValueError(f'{self.WHAT} parameter l2_regularization must be a '
                       f'finite number >= 0, got {self.l2_regularization!r}')
