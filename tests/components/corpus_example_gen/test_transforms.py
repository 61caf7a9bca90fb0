"""split_of: the split TFX's own partition function gives each record."""

import random

import pytest
from tfx.components.example_gen import base_example_gen_executor as base
from tfx.proto import example_gen_pb2

from components.corpus_example_gen import transforms


@pytest.mark.parametrize('sizes', [[9, 1], [1, 1], [3, 997], [5, 2, 11],
                                   [7, (1 << 31) + 5]])
def test_split_of_is_tfx_partition_fn(sizes):
  rng = random.Random(len(sizes))
  records = [rng.randbytes(rng.randint(0, 60)) for _ in range(2000)]
  buckets = [sum(sizes[:i + 1]) for i in range(len(sizes))]
  config = example_gen_pb2.SplitConfig(splits=[
      example_gen_pb2.SplitConfig.Split(name=f's{i}', hash_buckets=n)
      for i, n in enumerate(sizes)])
  expected = [base._PartitionFn(r, len(sizes), buckets, config)
              for r in records]
  assert transforms.split_of(records, buckets).tolist() == expected
  assert transforms.split_of([], buckets).tolist() == []
