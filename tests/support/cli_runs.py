"""The CLI run in the test's process, its standard output captured."""

import contextlib
import io
from typing import Tuple

from pipelines.cli.main import main


def run(*argv: str) -> Tuple[int, str]:
  """(exit code, stdout) of `python -m pipelines <argv>`, run here."""
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    code = main(list(argv))
  return code, out.getvalue()
