"""`python -m pipelines COMMAND ...`: one entry point for every command.

Each command lives in its own module under `pipelines/cli/commands/` with
`register(subparsers)` adding a parser whose `func(args) -> int` runs it.
"""

import argparse
import importlib
import os
import signal
import sys
from typing import List, Optional

COMMAND_MODULES = (
    'demo_data',
    'run',
    'retrain',
    'lineage',
    'pushed',
    'embed',
    'neighbors',
    'rollback',
    'compile',
    'submit',
    'schedule',
)


def build_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog='python -m pipelines',
      description='TPU embedding pipeline on TFX.')
  sub = parser.add_subparsers(dest='command', metavar='COMMAND')
  sub.required = True
  for name in COMMAND_MODULES:
    importlib.import_module(f'pipelines.cli.commands.{name}').register(sub)
  return parser


class UsageError(Exception):
  """A bad argument or input; printed as one line, exit code 2."""


# Exit code of a command whose reader went away (`pushed | head -3`): what a
# shell reports for a program ended by SIGPIPE, as `cat` or `ls` are.
BROKEN_PIPE_EXIT = 128 + signal.SIGPIPE


def _stdout_gone() -> int:
  """Quiet end once stdout's reader closed: no error line, no flush error."""
  devnull = os.open(os.devnull, os.O_WRONLY)
  os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush
  return BROKEN_PIPE_EXIT


def main(argv: Optional[List[str]] = None) -> int:
  args = build_parser().parse_args(argv)
  try:
    code = int(args.func(args) or 0)
    sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    return code
  except BrokenPipeError:
    return _stdout_gone()
  except (UsageError, ValueError, OSError, RuntimeError) as e:
    print(f'error: {e}', file=sys.stderr)
    return 2
