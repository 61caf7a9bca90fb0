"""PusherConfig: how many pushed versions the push root keeps."""

import dataclasses

from tpu_embeddings.core import settings


@dataclasses.dataclass(frozen=True)
class PusherConfig(settings.Settings):
  """Settings of EmbeddingPusher.

  Attributes:
    keep_versions: the newest versions kept under the push root (0: all).
  """
  WHAT = 'EmbeddingPusher'

  keep_versions: int = 5

  def validate(self):
    super().validate()
    self.check_int('keep_versions', 0)
