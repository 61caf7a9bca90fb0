"""ExampleGenConfig: which corpus files the ExampleGen reads and how it splits.
"""

import dataclasses

from tpu_embeddings.core import settings


@dataclasses.dataclass(frozen=True)
class ExampleGenConfig(settings.Settings):
  """Settings of the corpus ExampleGen.

  Attributes:
    pattern: files under the data root; `{SPAN}` selects the latest span.
    span_window: spans read into one Examples (the latest and earlier ones).
    train_buckets: hash buckets of the train split.
    eval_buckets: hash buckets of the eval split.
  """
  WHAT = 'ExampleGen'

  pattern: str = 'span-{SPAN}/*'
  span_window: int = 1
  train_buckets: int = 9
  eval_buckets: int = 1

  def validate(self):
    super().validate()
    for name in ('span_window', 'train_buckets', 'eval_buckets'):
      self.check_int(name, 1)
