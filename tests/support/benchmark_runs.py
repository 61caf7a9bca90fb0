"""Runs a benchmark script at a tiny size and checks the table it prints.

A renamed component, module or node breaks one of these runs instead of a
user's measurement. The sizes are far too small for the figures to mean
anything: each run is checked to have finished and printed the rows its
reader looks for, with numbers in them, never the numbers themselves.
"""

import os
import re
import subprocess
import sys
from typing import Sequence

from tests.support import paths

NUMBER = r'[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?'


def check_table(name: str, args: Sequence[str], rows: Sequence[str],
                cwd: str):
  """`python -m benchmarks.<name> <args>` in `cwd` exits 0 and prints each
  of `rows` followed by a number on its line."""
  env = dict(os.environ, PYTHONPATH=paths.REPO)
  done = subprocess.run(
      [sys.executable, '-m', f'benchmarks.{name}', *args],
      cwd=cwd, env=env, capture_output=True, text=True,
      timeout=900, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  check_rows(name, done.stdout, rows)


def check_rows(name: str, stdout: str, rows: Sequence[str]):
  """`stdout` prints each of `rows` followed by a number on its line."""
  for label in rows:
    pattern = rf'{re.escape(label)}[^\n]*\s{NUMBER}'
    assert re.search(pattern, stdout), (
        f'{name}: no row {label!r} with a number in\n{stdout[-3000:]}')
