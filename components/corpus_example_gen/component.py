"""`corpus_example_gen()`: FileBasedExampleGen configured for text corpora."""

from typing import Optional

from google.protobuf import struct_pb2
from tfx import v1 as tfx
from tfx.components import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2

from components.corpus_example_gen import executor

DEFAULT_PATTERN = 'span-{SPAN}/*'


def corpus_example_gen(input_base: str,
                       pattern: str = DEFAULT_PATTERN,
                       span_window: int = 1,
                       eval_buckets: int = 1,
                       train_buckets: int = 9,
                       span: Optional[int] = None):
  """ExampleGen over `<input_base>/<pattern>`, train/eval split by hash.

  `{SPAN}` in the pattern selects the latest span (or `span` when given);
  `span_window` > 1 also reads that many earlier spans into the same
  Examples. The Examples' `span` property is the latest span read.
  """
  if span_window < 1:
    raise ValueError(f'span_window must be >= 1, got {span_window}')
  if train_buckets < 1 or eval_buckets < 1:
    raise ValueError('train_buckets and eval_buckets must be >= 1')
  struct = struct_pb2.Struct()
  struct.update({executor.SPAN_WINDOW_KEY: span_window,
                 executor.PATTERN_KEY: pattern})
  custom_config = example_gen_pb2.CustomConfig()
  custom_config.custom_config.Pack(struct)
  range_config = None
  if span is not None:
    range_config = tfx.proto.RangeConfig(
        static_range=tfx.proto.StaticRange(start_span_number=span,
                                           end_span_number=span))
  return FileBasedExampleGen(
      input_base=input_base,
      input_config=tfx.proto.Input(splits=[
          tfx.proto.Input.Split(name='corpus', pattern=pattern)]),
      output_config=tfx.proto.Output(split_config=tfx.proto.SplitConfig(
          splits=[
              tfx.proto.SplitConfig.Split(name='train',
                                          hash_buckets=train_buckets),
              tfx.proto.SplitConfig.Split(name='eval',
                                          hash_buckets=eval_buckets),
          ])),
      custom_config=custom_config,
      range_config=range_config,
      custom_executor_spec=executor_spec.BeamExecutorSpec(executor.Executor))
