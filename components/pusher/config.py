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

  # 0 keeps all; a version a day for 27 years is 10,000.
  keep_versions: int = settings.bounded(5, 0, 10_000)
