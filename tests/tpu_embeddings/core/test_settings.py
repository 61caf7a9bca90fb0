"""Settings: the typed, validated base of every component config."""

import dataclasses
import json
from typing import Dict, Optional

import pytest

from tpu_embeddings.core import settings


@dataclasses.dataclass(frozen=True)
class Example(settings.Settings):
  WHAT = 'Example'

  count: int = 1
  rate: float = 0.5
  name: str = ''
  limit: Optional[float] = None
  extra: Optional[Dict[str, int]] = None

  def validate(self):
    super().validate()
    self.check_int('count', 1)


def test_types_are_checked_and_ints_become_floats():
  assert Example(rate=2).rate == 2.0 and isinstance(Example(rate=2).rate, float)
  for field, value, message in [
      ('count', True, 'count must be an integer, got True'),
      ('count', 1.5, 'count must be an integer'),
      ('rate', 'x', 'rate must be a number'),
      ('rate', float('inf'), 'rate must be a finite number'),
      ('name', 3, 'name must be a string'),
      ('extra', [1], 'extra must be a JSON object'),
      ('count', 0, 'count must be an integer >= 1, got 0'),
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
