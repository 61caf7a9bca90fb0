"""The memory bound of an export: when a table may be held twice.

Exports whose variables hold at most `OVERLAP_MAX_BYTES` may be held more
than once at a time in the exporter's pod, for speed: the load checks
overlap the export, and the serving export's two loads run side by side. A
larger table is held once at a time (the checks follow the export, one load
after the other), so the pod needs one table's memory and a fixed working
set. Read it as `limits.OVERLAP_MAX_BYTES` at call time (tests lower it).
"""

import os

OVERLAP_MAX_BYTES = 1 << 26


def variables_bytes(export_dir: str) -> int:
  """Bytes of an export's `variables/` files (its table, mostly)."""
  directory = os.path.join(export_dir, 'variables')
  if not os.path.isdir(directory):
    return 0
  return sum(os.path.getsize(os.path.join(directory, name))
             for name in os.listdir(directory))
