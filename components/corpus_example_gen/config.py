"""ExampleGenConfig: which corpus files the ExampleGen reads and how it splits.
"""

import dataclasses

from tpu_embeddings.core import settings


@dataclasses.dataclass(frozen=True)
class ExampleGenConfig(settings.Settings):
  """Settings of the corpus ExampleGen.

  Attributes:
    pattern: files under the data root; `{SPAN}` selects the latest span.
      Relative, without ".." segments: it cannot leave the data root.
    span_window: spans read into one Examples (the latest and earlier ones).
    train_buckets: hash buckets of the train split.
    eval_buckets: hash buckets of the eval split.
    follow_symlinks: read files that are, or sit below, symlinks (refused by
      default: a link may point anywhere on the machine).
    format: 'text' (sequences, one per line: this ExampleGen), or what stock
      TFX ExampleGens read, pre-split into `<pattern's folder>/train/*` and
      `<pattern's folder>/eval/*`: 'csv' (CsvExampleGen) or 'tfrecord'
      (tf.Examples, ImportExampleGen).
  """
  WHAT = 'ExampleGen'
  FORMATS = ('text', 'csv', 'tfrecord')
  # What only the corpus ExampleGen of format 'text' reads: it reads several
  # spans, splits by hash and checks symlinks itself.
  TEXT_ONLY = ('span_window', 'train_buckets', 'eval_buckets',
               'follow_symlinks')

  pattern: str = 'span-{SPAN}/*'
  # Ten years of daily spans.
  span_window: int = settings.bounded(1, 1, 3660)
  # The split is by hash bucket; 1,000 buckets split at 0.1% granularity.
  train_buckets: int = settings.bounded(9, 1, 1000)
  eval_buckets: int = settings.bounded(1, 1, 1000)
  follow_symlinks: bool = False
  format: str = 'text'

  def validate(self):
    super().validate()
    parts = self.pattern.replace('\\', '/').split('/')
    if not self.pattern or self.pattern.startswith('/') or '..' in parts:
      raise ValueError(
          f'example_gen.pattern {self.pattern!r} must be a relative pattern '
          'without ".." segments: it is read under the data root')
    if self.format not in self.FORMATS:
      raise ValueError(f'{self.WHAT} parameter format must be one of '
                       f'{self.FORMATS}, got {self.format!r}')
    if self.format != 'text':
      for field in dataclasses.fields(self):
        if field.name in self.TEXT_ONLY and (
            getattr(self, field.name) != field.default):
          raise ValueError(
              f'example_gen.{field.name} applies only to format "text" (the '
              'corpus ExampleGen); stock ExampleGens read one span\'s '
              f'pre-split train/ and eval/ files: remove it for format '
              f'{self.format!r}')
