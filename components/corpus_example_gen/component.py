"""`corpus_example_gen()`: FileBasedExampleGen configured for text corpora."""

from typing import Optional

from google.protobuf import struct_pb2

# Import the one component class: `tfx.v1` / `tfx.components` import every
# TFX component and its cloud extensions (tens of seconds).
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2
from tfx.proto import range_config_pb2

from components import keys
from components.corpus_example_gen import executor
from components.corpus_example_gen.config import ExampleGenConfig


def corpus_example_gen(input_base: str,
                       config: Optional[ExampleGenConfig] = None,
                       span: Optional[int] = None,
                       **settings_by_name):
  """ExampleGen over `<input_base>/<config.pattern>`, train/eval split by hash.

  `{SPAN}` in the pattern selects the latest span (or `span` when given);
  `span_window` > 1 also reads that many earlier spans into the same
  Examples. The Examples' `span` property is the latest span read.
  `**settings_by_name` override fields of `config` by name.
  """
  config = (config or ExampleGenConfig()).replace(**settings_by_name)
  pattern = config.pattern
  struct = struct_pb2.Struct()
  struct.update({keys.SPAN_WINDOW: config.span_window,
                 keys.PATTERN: pattern,
                 keys.FOLLOW_SYMLINKS: config.follow_symlinks})
  custom_config = example_gen_pb2.CustomConfig()
  custom_config.custom_config.Pack(struct)
  range_config = None
  if span is not None:
    range_config = range_config_pb2.RangeConfig(
        static_range=range_config_pb2.StaticRange(start_span_number=span,
                                           end_span_number=span))
  return FileBasedExampleGen(
      input_base=input_base,
      input_config=example_gen_pb2.Input(splits=[
          example_gen_pb2.Input.Split(name='corpus', pattern=pattern)]),
      output_config=example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(
          splits=[
              example_gen_pb2.SplitConfig.Split(name=keys.TRAIN_SPLIT,
                                          hash_buckets=config.train_buckets),
              example_gen_pb2.SplitConfig.Split(name=keys.EVAL_SPLIT,
                                          hash_buckets=config.eval_buckets),
          ])),
      custom_config=custom_config,
      range_config=range_config,
      custom_executor_spec=executor_spec.BeamExecutorSpec(executor.Executor))
