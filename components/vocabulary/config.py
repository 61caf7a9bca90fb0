"""VocabularyConfig: which tokens the vocabulary keeps."""

import dataclasses

from tpu_embeddings.core import settings


@dataclasses.dataclass(frozen=True)
class VocabularyConfig(settings.Settings):
  """Settings of the Vocabulary component.

  Attributes:
    min_count: tokens seen fewer times are dropped.
    max_tokens: the most frequent tokens kept (0: no cap).
    split: the Examples split counted.
  """
  WHAT = 'Vocabulary'

  min_count: int = 5
  max_tokens: int = 0
  split: str = 'train'

  def validate(self):
    super().validate()
    self.check_int('min_count', 1)
    self.check_int('max_tokens', 0)
