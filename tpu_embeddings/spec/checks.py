"""Checks of embedding-spec fields; each failure names the field."""

import math
from typing import Any

from tpu_embeddings.core import settings


class SpecError(ValueError):
  """A bad value in an embedding spec; the message names the field."""


def fail(field: str, message: str):
  raise SpecError(f'embedding spec: {field}: {message}')


def check_name(field: str, value: Any):
  if not isinstance(value, str) or not value:
    fail(field, f'must be a non-empty string, got {value!r}')
  if '/' in value or value.startswith('.'):
    fail(field, f'{value!r} may not contain "/" or start with "."')


def check_int(field: str, value: Any, low: int, high: int):
  if isinstance(value, bool) or not isinstance(value, int):
    fail(field, f'must be an integer, got {value!r}')
  _check_range(field, value, low, high)


def check_number(field: str, value: Any, low: float, high: float):
  if (isinstance(value, bool) or not isinstance(value, (int, float)) or
      not math.isfinite(value)):
    fail(field, f'must be a finite number, got {value!r}')
  _check_range(field, value, low, high)


def _check_range(field: str, value, low, high):
  problem = settings.range_problem(value, low, high)
  if problem:
    fail(field, problem)
