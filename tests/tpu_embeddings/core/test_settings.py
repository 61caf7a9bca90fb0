"""Settings: the typed, validated base of every component config."""

import dataclasses
import json
from typing import Dict, Optional

import pytest

from tpu_embeddings.core import settings


@dataclasses.dataclass(frozen=True)
class Example(settings.Settings):
  WHAT = 'Example'

  count: int = settings.bounded(1, 1, 1000)
  rate: float = settings.bounded(0.5, 0.0, 10.0)
  name: str = ''
  limit: Optional[float] = settings.bounded(None, -1.0, 1.0)
  extra: Optional[Dict[str, int]] = None


def test_types_are_checked_and_ints_become_floats():
  assert Example(rate=2).rate == 2.0 and isinstance(Example(rate=2).rate, float)
  for field, value, message in [
      ('count', True, 'count must be an integer, got True'),
      ('count', 1.5, 'count must be an integer'),
      ('rate', 'x', 'rate must be a number'),
      ('rate', float('inf'), 'rate must be a finite number'),
      ('name', 3, 'name must be a string'),
      ('extra', [1], 'extra must be a JSON object'),
  ]:
    with pytest.raises(ValueError, match=f'Example parameter {message}'):
      Example(**{field: value})


def test_json_round_trip_and_unknown_names():
  config = Example(count=3, limit=0.1, extra={'a': 1})
  assert Example.from_json(config.to_json()) == config
  assert Example.from_exec_properties(
      {settings.CONFIG_KEY: config.to_json(), 'root': '/x'},
      wiring=['root']) == config
  with pytest.raises(ValueError, match="Example: unknown parameter 'root'"):
    Example.from_exec_properties({settings.CONFIG_KEY: '{}', 'root': '/x'})
  with pytest.raises(ValueError, match="unknown parameter 'cnt'"):
    Example.from_json(json.dumps({'cnt': 2}))
  with pytest.raises(ValueError, match="unknown parameter 'cnt'"):
    config.replace(cnt=2)
  with pytest.raises(ValueError, match='not valid JSON'):
    Example.from_json('{')


def test_bounds_are_checked_with_the_types():
  assert Example(count=1000, rate=0.0, limit=-1.0).count == 1000
  assert Example(limit=None).limit is None  # an unset option: not checked
  for field, value, message in [
      ('count', 0, 'count must be an integer >= 1 and <= 1000, got 0'),
      ('count', 1001, 'count must be an integer >= 1 and <= 1000, got 1001'),
      ('count', 10**9, 'count must be an integer >= 1 and <= 1000, '
       'got 1,000,000,000'),
      ('rate', 10.5, 'rate must be a number >= 0 and <= 10, got 10.5'),
      ('limit', -2, 'limit must be a number >= -1 and <= 1, got -2'),
  ]:
    with pytest.raises(ValueError) as e:
      Example(**{field: value})
    assert str(e.value) == f'Example parameter {message}'


def test_a_default_outside_its_bounds_is_a_programming_error():
  with pytest.raises(ValueError, match=r'default 0 is outside \[1, 10\]'):
    settings.bounded(0, 1, 10)
