"""Settings: the base of every component's typed config.

A component's config is a frozen dataclass deriving from `Settings`: its
fields are the settings with their defaults (the only place a default is
stated), every value is type-checked on construction, every numeric one is
checked against the bounds its field states (`bounded`), and `validate()`
checks what depends on several fields. The config travels to the executor as
one JSON execution parameter (`CONFIG_KEY`). Importable without TensorFlow or
TFX, so a command line refuses a bad value before the heavy imports.
"""

import dataclasses
import json
import math
import typing
from typing import Any, Dict, Mapping, Optional, Type, TypeVar

# The execution parameter that carries a component's config as JSON.
CONFIG_KEY = 'config'

T = TypeVar('T', bound='Settings')

# The key of a field's (low, high) in its metadata: see `bounded`.
BOUNDS = 'bounds'


_TYPE_NAMES = {int: 'an integer', float: 'a number', str: 'a string',
               bool: 'true or false'}


def _coerce(what: str, kind, value: Any) -> Any:
  """`value` as a `kind` (int -> float is the only conversion), or raise."""
  if typing.get_origin(kind) is typing.Union:
    options = [k for k in typing.get_args(kind) if k is not type(None)]
    if value is None:
      return None
    kind = options[0]
  if typing.get_origin(kind) in (dict, Dict):
    if not isinstance(value, dict):
      raise ValueError(f'{what} must be a JSON object, got {value!r}')
    return value
  if kind is float and isinstance(value, int) and not isinstance(value, bool):
    value = float(value)
  if kind is float and isinstance(value, float) and not math.isfinite(value):
    raise ValueError(f'{what} must be a finite number, got {value!r}')
  if kind in (int, float, str, bool) and (
      not isinstance(value, kind) or (kind is not bool and
                                      isinstance(value, bool))):
    raise ValueError(f'{what} must be {_TYPE_NAMES[kind]}, got {value!r}')
  return value


def bounded(default: Any, low: float, high: float) -> Any:
  """A numeric setting's field: its default and the range [low, high] its
  values must be in (both included).

  Every int and float setting is declared this way, with a comment saying
  why its bounds are what they are: generous for real TPU training, but a
  value no training could use (a window of a billion) is refused when the
  config is built, before anything runs. An optional setting left at None
  is not checked.
  """
  if default is not None and not low <= default <= high:
    raise ValueError(f'default {default!r} is outside [{low}, {high}]')
  return dataclasses.field(default=default, metadata={BOUNDS: (low, high)})


def _number(x: float) -> str:
  """1000, 10,000, 1,000,000 (whole floats too), 0.5, 1e-09."""
  if isinstance(x, float) and x.is_integer() and abs(x) < 1e16:
    x = int(x)
  if isinstance(x, int):
    return f'{x:,}' if abs(x) >= 10_000 else str(x)
  return f'{x:g}'


def range_problem(value: float, low: float, high: float) -> Optional[str]:
  """'must be ... >= low and <= high, got value', or None when in range."""
  if low <= value <= high:
    return None
  kind = 'an integer' if isinstance(value, int) else 'a number'
  return (f'must be {kind} >= {_number(low)} and <= {_number(high)}, got '
          f'{_number(value)}')


@dataclasses.dataclass(frozen=True)
class Settings:
  """Typed, validated settings of one component."""

  # Prefix of every error message, e.g. 'EmbeddingTrainer'.
  WHAT = 'settings'

  def __post_init__(self):
    hints = typing.get_type_hints(type(self))
    for field in dataclasses.fields(self):
      value = _coerce(f'{self.WHAT} parameter {field.name}', hints[field.name],
                      getattr(self, field.name))
      object.__setattr__(self, field.name, value)
      problem = (range_problem(value, *field.metadata[BOUNDS])
                 if BOUNDS in field.metadata and value is not None else None)
      if problem:
        raise ValueError(f'{self.WHAT} parameter {field.name} {problem}')
    self.validate()

  def validate(self):
    """Checks of several fields together; raises ValueError naming them."""

  @classmethod
  def names(cls) -> typing.List[str]:
    return [f.name for f in dataclasses.fields(cls)]

  @classmethod
  def from_dict(cls: Type[T], values: Mapping[str, Any]) -> T:
    unknown = sorted(set(values) - set(cls.names()))
    if unknown:
      raise ValueError(f'{cls.WHAT}: unknown parameter {unknown[0]!r}; '
                       f'parameters are {cls.names()}')
    return cls(**values)

  @classmethod
  def from_json(cls: Type[T], text: str) -> T:
    try:
      values = json.loads(text) if text else {}
    except json.JSONDecodeError as e:
      raise ValueError(f'{cls.WHAT}: config is not valid JSON: {e}') from e
    if not isinstance(values, dict):
      raise ValueError(f'{cls.WHAT}: config must be a JSON object')
    return cls.from_dict(values)

  @classmethod
  def from_exec_properties(cls: Type[T], props: Mapping[str, Any],
                           wiring: typing.Iterable[str] = ()) -> T:
    """The config in `props[CONFIG_KEY]`; `wiring` names the other keys."""
    unknown = sorted(set(props) - {CONFIG_KEY} - set(wiring))
    if unknown:
      raise ValueError(f'{cls.WHAT}: unknown parameter {unknown[0]!r}')
    return cls.from_json(props.get(CONFIG_KEY) or '')

  def to_json(self) -> str:
    return json.dumps(dataclasses.asdict(self), sort_keys=True)

  def replace(self: T, **changes) -> T:
    unknown = sorted(set(changes) - set(self.names()))
    if unknown:
      raise ValueError(f'{self.WHAT}: unknown parameter {unknown[0]!r}; '
                       f'parameters are {self.names()}')
    return dataclasses.replace(self, **changes)
