"""The trainer's progress in the local CLI: one updating line on a terminal,
plain lines otherwise (a log file, CI).

The trainer logs each progress line through absl with its fields attached
(`tpu_embeddings.training.training_loop.PROGRESS_RECORD`); this handler, on the
`absl` logger, shows those records only, whatever the other handlers let
through, so the progress is visible without --verbose.
"""

import logging
from typing import Any, Dict, Optional, TextIO

from tpu_embeddings.training.training_loop import PROGRESS_RECORD

_INDENT = ' ' * 4


def _clock(seconds: float) -> str:
  seconds = int(round(seconds))
  hours, rest = divmod(seconds, 3600)
  return (f'{hours}:{rest // 60:02d}:{rest % 60:02d}' if hours else
          f'{rest // 60}:{rest % 60:02d}')


def format_progress(fields: Dict[str, Any]) -> str:
  """'step 1200/3879  epoch 2/5  loss 2.4312  171,034 examples/s  ETA 0:15'"""
  total = fields.get('total_steps')
  parts = [f'step {fields["step"]}' + (f'/{total}' if total else '')]
  if fields.get('epoch'):
    parts.append(f'epoch {fields["epoch"]}/{fields["epochs"]}')
  parts.append(f'loss {fields["loss"]:.4f}')
  parts.append(f'{fields["examples_per_sec"]:,.0f} examples/s')
  if fields.get('eta_seconds') is not None:
    parts.append(f'ETA {_clock(fields["eta_seconds"])}')
  return '  '.join(parts)


class ProgressLine(logging.Handler):
  """Writes the trainer's progress records to `out`."""

  def __init__(self, out: TextIO, terminal: Optional[bool] = None):
    super().__init__(logging.INFO)
    self._out = out
    self._terminal = (out.isatty() if terminal is None else terminal)
    self._open = False  # an updating line waits for its newline

  def emit(self, record: logging.LogRecord):
    fields = getattr(record, PROGRESS_RECORD, None)
    if not fields:
      return
    line = _INDENT + format_progress(fields)
    if self._terminal:
      self._out.write('\r\x1b[K' + line)
      self._open = True
    else:
      self._out.write(line + '\n')
    self._out.flush()

  def end_line(self):
    """Ends an updating line before other output."""
    if self._open:
      self._out.write('\n')
      self._out.flush()
      self._open = False

  def __enter__(self):
    absl_logger = logging.getLogger('absl')
    self._level = absl_logger.level
    if absl_logger.getEffectiveLevel() > logging.INFO:
      absl_logger.setLevel(logging.INFO)
    absl_logger.addHandler(self)
    return self

  def __exit__(self, *exc):
    absl_logger = logging.getLogger('absl')
    absl_logger.removeHandler(self)
    absl_logger.setLevel(self._level)
    self.end_line()
