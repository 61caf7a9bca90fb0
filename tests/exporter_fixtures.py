"""Exporter entry points only tests use.

`run_in_fresh_process` load-checks exports in one `FreshProcess`.
"""

from typing import Sequence, Tuple

from components.exporter import fresh_process
from components.exporter import load_check
from components.exporter.canaries import Canary


def run_in_fresh_process(exports: Sequence[Tuple[str, str]], canary: Canary,
                         timeout_seconds: float = (
                             fresh_process.DEFAULT_TIMEOUT_SECONDS)):
  """Loads each `(kind, export_dir)` in one new Python process.

  Raises LoadCheckError naming the export and the reason on any failure.
  """
  for kind, _ in exports:
    load_check.check_kind(kind)
  with fresh_process.FreshProcess(timeout_seconds) as process:
    for kind, path in exports:
      process.submit(kind, path, canary)
    process.wait()

