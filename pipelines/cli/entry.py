"""The process entry of `python -m pipelines` and the `tpu-embeddings` command.

Sets the process up before anything heavy is imported, then runs the CLI.
"""

import os
import sys
import warnings

from pipelines import stop_signals
from pipelines.cli import deferred_inits
from pipelines.cli import process_exit
from pipelines.cli import stderr_filter
from tpu_embeddings.core import huge_pages


def main() -> int:
  # Before anything is imported: a multi-GB table restored or exported in
  # this process then faults huge pages, not 4 KiB ones.
  huge_pages.reexec_if_needed(['-m', 'pipelines'] + sys.argv[1:])
  # Quiet TensorFlow's C++ start-up chatter and library deprecation notices;
  # `run --verbose` still shows TFX's own logs.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  for category in (DeprecationWarning, FutureWarning, UserWarning):
    warnings.filterwarnings('ignore', category=category)
  # ...and the three ERROR lines XLA logs at `import tensorflow` on every
  # machine (real errors still show: TF_CPP_MIN_LOG_LEVEL stays at 2).
  stderr_filter.install()
  # TFX's standard components, TFMA, Beam's GCP clients: imported by the
  # modules a run needs, used by none of them (deferred_inits).
  deferred_inits.install()
  # SIGTERM unwinds like Ctrl-C: one line, what was kept, exit 143.
  stop_signals.install()
  try:
    from pipelines.cli import main as cli
  except KeyboardInterrupt as e:  # stopped while importing
    print(f'stopped by {stop_signals.name(stop_signals.signal_of(e))}',
          file=sys.stderr)
    return stop_signals.exit_code(stop_signals.signal_of(e))
  # Ends the process here, without the interpreter's teardown.
  return process_exit.end(cli.main())
