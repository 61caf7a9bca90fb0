"""`python -m pipelines COMMAND ...`: one entry point for every command.

The commands are grouped by what they act on (`pipeline_commands`,
`push_commands`, `kubeflow_commands`); each group's `register(subparsers)`
adds parsers whose `func(args) -> int` runs the command.
"""

import argparse
import os
import signal
import sys
import traceback
from typing import List, Optional

from pipelines import stop_signals
from pipelines.cli import failures
from pipelines.cli import kubeflow_commands
from pipelines.cli import pipeline_commands
from pipelines.cli import push_commands
from pipelines.cli import selftest_command


def build_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog='python -m pipelines',
      description='TPU embedding pipeline on TFX.')
  sub = parser.add_subparsers(dest='command', metavar='COMMAND')
  sub.required = True
  for commands in (pipeline_commands, push_commands, kubeflow_commands,
                   selftest_command):
    commands.register(sub)
  return parser


class UsageError(ValueError):
  """A bad argument or input; printed as one line, exit code 2."""


# Exit code of a command whose reader went away (`pushed | head -3`): what a
# shell reports for a program ended by SIGPIPE, as `cat` or `ls` are.
BROKEN_PIPE_EXIT = 128 + signal.SIGPIPE


def _stdout_gone() -> int:
  """Quiet end once stdout's reader closed: no error line, no flush error."""
  devnull = os.open(os.devnull, os.O_WRONLY)
  os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush
  return BROKEN_PIPE_EXIT


def _stopped(error: KeyboardInterrupt) -> int:
  signum = stop_signals.signal_of(error)
  line = (error.line() if hasattr(error, 'line') else
          f'stopped by {stop_signals.name(signum)}')
  print(line, file=sys.stderr, flush=True)
  return stop_signals.exit_code(signum)


def main(argv: Optional[List[str]] = None) -> int:
  args = build_parser().parse_args(argv)
  try:
    code = int(args.func(args) or 0)
    sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    return code
  except BrokenPipeError:
    return _stdout_gone()
  except KeyboardInterrupt as e:  # SIGINT, and SIGTERM (stop_signals)
    return _stopped(e)
  except Exception as e:
    if getattr(args, 'verbose', False):
      traceback.print_exc()
    code, line = failures.describe(e)
    print(f'error: {line}', file=sys.stderr, flush=True)
    return code
