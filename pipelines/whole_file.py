"""A file written whole or not at all: a compiled spec, a home's record."""

import os
import tempfile


def write(output: str, text: str):
  """Writes `text` to `output` through a temporary file beside it, so that a
  failed or interrupted write leaves the previous file (or none)."""
  fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(output) + '.',
                             dir=os.path.dirname(os.path.abspath(output)))
  try:
    with os.fdopen(fd, 'w') as f:
      f.write(text)
    os.replace(tmp, output)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise
