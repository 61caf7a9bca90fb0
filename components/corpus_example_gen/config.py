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
    format: 'text' (sequences, one per line: this ExampleGen), or what stock
      TFX ExampleGens read, pre-split into `<pattern's folder>/train/*` and
      `<pattern's folder>/eval/*`: 'csv' (CsvExampleGen) or 'tfrecord'
      (tf.Examples, ImportExampleGen).
  """
  WHAT = 'ExampleGen'
  FORMATS = ('text', 'csv', 'tfrecord')

  pattern: str = 'span-{SPAN}/*'
  span_window: int = 1
  train_buckets: int = 9
  eval_buckets: int = 1
  format: str = 'text'

  def validate(self):
    super().validate()
    for name in ('span_window', 'train_buckets', 'eval_buckets'):
      self.check_int(name, 1)
    if self.format not in self.FORMATS:
      raise ValueError(f'{self.WHAT} parameter format must be one of '
                       f'{self.FORMATS}, got {self.format!r}')
    if self.format != 'text' and self.span_window != 1:
      raise ValueError(f'{self.WHAT}: span_window > 1 reads several spans '
                       'of text only; stock ExampleGens read one')
