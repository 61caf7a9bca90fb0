"""Fixtures shared by the trainer component's tests."""

import collections

import pytest

from tests.support import artifact_fixtures as fx


@pytest.fixture
def small_inputs(tmp_path):
  """(Examples artifacts, Vocabulary URI) of a 4-token, 20-line corpus."""
  lines = [['a', 'b', 'c'], ['c', 'd', 'a']] * 10
  fx.write_examples(str(tmp_path / 'examples'), {'train': lines})
  fx.write_vocabulary(str(tmp_path / 'vocabulary'),
                      collections.Counter(t for l in lines for t in l))
  return ([fx.SpanlessExamples(str(tmp_path / 'examples'))],
          str(tmp_path / 'vocabulary'))
