"""A module file's own code failing while it runs, as one line.

`ModelModule` (model_module.py) calls every function of a module file
through `ModelModule.call`: what the function raises, or a value it returns
that the contract does not allow, becomes a UserCodeError naming the module
file (as its user gave it), the function and the exception. The CLI gives
it its own exit code (pipelines/cli/failures.py).
"""

from typing import Any


class UserCodeError(Exception):
  """A function of a module file raised, or returned what the contract does
  not allow, while it ran. Not a ValueError: the pipeline's handlers of bad
  inputs and verdicts must not take it for one of theirs."""

  def __init__(self, path: str, function: str, what: str):
    super().__init__(f'module file {path}: {function} {what}')
    self.path = path
    self.function = function
    self.what = what


def first_line(error: BaseException, limit: int = 300) -> str:
  line = (str(error).strip().splitlines() or [''])[0].strip()
  return line if len(line) <= limit else line[:limit - 3] + '...'


def raised(error: BaseException) -> str:
  """'raised <type>: <first line of the message>'."""
  text = first_line(error)
  return f'raised {type(error).__name__}' + (f': {text}' if text else '')


def shown(value: Any) -> str:
  """How a wrong return value is named: its type, or what is wrong."""
  if isinstance(value, dict):
    return 'an empty dict'
  return 'None' if value is None else f'a {type(value).__name__}'


def no_model_hint(model: Any, has_model_fn: bool) -> str:
  """Why a function given `model=None` may have failed ('' with a model)."""
  if model is not None:
    return ''
  if not has_model_fn:
    return ' (model was None: the module defines no model_fn)'
  return ' (model was None: model_fn returned None)'
