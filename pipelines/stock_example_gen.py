"""The stock TFX ExampleGens the pipeline reads pre-split data with.

    <data root>/span-<N>/train/*    the train split
    <data root>/span-<N>/eval/*     the eval split (e.g. each user's
                                    held-out last interaction)

`csv` files go through CsvExampleGen (one feature per column, integer
columns as int64), `tfrecord` files of tf.Examples through
ImportExampleGen. `{SPAN}` selects the latest span as for text. The node
keeps the id `FileBasedExampleGen` (CsvExampleGen and ImportExampleGen are
FileBasedExampleGens), so homes, ML Metadata and Kubeflow task names do not
depend on the data's format.
"""

import posixpath

from components import keys
from components.corpus_example_gen.config import ExampleGenConfig

NODE_ID = 'FileBasedExampleGen'


def split_patterns(pattern: str) -> dict:
  """{split: file pattern}: the folders `train` and `eval` beside the
  pattern's files."""
  folder = posixpath.dirname(pattern)
  return {split: posixpath.join(folder, split, '*')
          for split in (keys.TRAIN_SPLIT, keys.EVAL_SPLIT)}


def stock_example_gen(input_base: str, config: ExampleGenConfig):
  """CsvExampleGen or ImportExampleGen over the pre-split spans."""
  # Imported when used: each pulls in its executor's dependencies (and
  # split_patterns serves the command line's checks before TFX is imported).
  from tfx.proto import example_gen_pb2
  if config.format == 'csv':
    from tfx.components.example_gen.csv_example_gen import component
    gen = component.CsvExampleGen
  else:
    from tfx.components.example_gen.import_example_gen import component
    gen = component.ImportExampleGen
  input_config = example_gen_pb2.Input(splits=[
      example_gen_pb2.Input.Split(name=split, pattern=pattern)
      for split, pattern in split_patterns(config.pattern).items()])
  return gen(input_base=input_base, input_config=input_config).with_id(
      NODE_ID)
