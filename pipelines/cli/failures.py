"""One line and one exit code for every way a command can end badly.

    0    done
    1    a pushed version is damaged: `pushed` (with or without --verify)
         found one, or `embed` / `neighbors` / `rollback` refused to use it;
         the line names the file and the rollback that serves an intact one
    2    a bad argument, setting, input file or home: the line names it
    3    the machine: no space left, a read-only or unwritable file system,
         an I/O error; fix it and run the same command again (it continues)
    4    anything else (the line names the component and the exception;
         `run --verbose` shows the libraries' logs)
    5    the module file's own code failed while it ran: one of its
         functions (or its top-level code, when imported) raised, or a
         function returned what the model contract does not allow; the
         line names the module file (the user's path), the function and
         the exception. (A module file that breaks the contract when it
         is loaded or checked as the command starts, e.g. a required name
         or the 'serving_default' signature missing, is 2.)
    6    `run` or `retrain` trained a model that validation did not bless:
         nothing was pushed; the line says which gates refused it
    130  stopped by SIGINT (Ctrl-C), 143 by SIGTERM; the line says what was
         kept for the rerun
    141  stdout was closed (`pushed | head -3`)
"""

import errno
import re
from typing import Optional, Tuple

from pipelines import stop_signals

EXIT_DAMAGED = 1
EXIT_INPUT = 2
EXIT_MACHINE = 3
EXIT_FAILED = 4
EXIT_USER_CODE = 5
EXIT_NOT_BLESSED = 6

_MACHINE = {
    errno.ENOSPC: ('no space left on device', 'free space there'),
    errno.EDQUOT: ('disk quota exceeded', 'free space there'),
    errno.EROFS: ('read-only file system', 'make it writable'),
    errno.EACCES: ('permission denied', 'give this user write access'),
    errno.EPERM: ('operation not permitted', 'give this user write access'),
    errno.EIO: ('I/O error', 'check the disk'),
}
# The same, as TensorFlow, SQLite (ML Metadata) and Beam word them.
_MACHINE_TEXT = (
    (re.compile(r'no space left on device|database or disk is full', re.I),
     errno.ENOSPC),
    (re.compile(r'disk quota exceeded', re.I), errno.EDQUOT),
    (re.compile(r'read-only file system|readonly database', re.I),
     errno.EROFS),
    (re.compile(r'permission denied', re.I), errno.EACCES),
    (re.compile(r'operation not permitted', re.I), errno.EPERM),
    (re.compile(r'input/output error|disk i/o error', re.I), errno.EIO),
)
_BEAM_SUFFIX = re.compile(r" \[while running '.*$", re.S)
# The op TensorFlow prefixes to an error raised inside a function.
_TF_FUNCTION_NODE = re.compile(r'\{\{function_node [^}]*\}\}\s*')
# ML Metadata's SQLite errors: "[Cannot create node for <the protobuf>]Error
# when executing query: <SQLite's message> query: <the SQL statement>"; the
# line keeps SQLite's message.
_METADATA_QUERY = re.compile(
    r'^.*?Error when executing query: (.*?)\s*query:.*$', re.S)


def machine_errno(error: BaseException) -> Optional[int]:
  """The errno of a machine failure (module docstring) behind `error`."""
  for e in stop_signals.error_chain(error):
    if isinstance(e, OSError) and e.errno in _MACHINE:
      return e.errno
  for e in stop_signals.error_chain(error):
    for pattern, number in _MACHINE_TEXT:
      if pattern.search(str(e)):
        return number
  return None


def first_line(error: BaseException, limit: int = 400) -> str:
  """The message's first line, without Beam's transform suffix."""
  text = _TF_FUNCTION_NODE.sub('', _BEAM_SUFFIX.sub('', str(error))).strip()
  text = _METADATA_QUERY.sub(r'ML Metadata: \1', text)
  line = (text.splitlines() or [''])[0].strip() or type(error).__name__
  return line if len(line) <= limit else line[:limit - 3] + '...'


def _is_input(error: BaseException) -> bool:
  return isinstance(error, (ValueError, RuntimeError,
                            FileNotFoundError, NotADirectoryError,
                            IsADirectoryError, FileExistsError))


def _user_code_error(error: BaseException) -> Optional[BaseException]:
  """The UserCodeError (a module file's function failed) behind `error`."""
  from tpu_embeddings.models.user_code import UserCodeError
  return next((e for e in stop_signals.error_chain(error)
               if isinstance(e, UserCodeError)), None)


def describe(error: BaseException) -> Tuple[int, str]:
  """(exit code, the one line) for an exception that ended a command."""
  from tpu_embeddings.push_root import integrity
  node = getattr(error, 'node', None)
  cause = getattr(error, 'cause', error)
  kept = getattr(error, 'kept', '')
  where = f'{node} failed: ' if node else ''
  after = f'; {kept}' if kept else ''
  number = machine_errno(cause)
  if number is not None:
    what, fix = _MACHINE[number]
    path = next((e.filename for e in stop_signals.error_chain(cause)
                 if isinstance(e, OSError) and e.filename), None)
    detail = f' ({path})' if path else f' ({first_line(cause, 240)})'
    return EXIT_MACHINE, (f'{where}{what}{detail}: {fix} and run the same '
                          f'command again{after}')
  if isinstance(cause, integrity.DamagedVersionError):
    return EXIT_DAMAGED, f'{where}{first_line(cause, 1000)}{after}'
  user_code = _user_code_error(cause)
  if user_code is not None:
    return EXIT_USER_CODE, f'{where}{first_line(user_code, 1000)}{after}'
  if _is_input(cause) or isinstance(cause, OSError) and not node:
    return EXIT_INPUT, f'{where}{first_line(cause)}{after}'
  return EXIT_FAILED, (f'{where}{type(cause).__name__}: {first_line(cause)}'
                       f'{after}')
