"""ML Metadata and the pipeline root of a home belong together.

TFX's local runner names each output after its execution's id in ML Metadata
(`pipeline/<node>/<output>/<execution id>/`). A home whose `metadata.sqlite`
was deleted, replaced by an older copy or by another home's store would
number new executions from ids the folders under `pipeline/` already use:
a new trainer would continue an old checkpoint, and a failed one would have
its (pushed) model folder deleted by TFX. Before every run:

* the store gets an id (a context of type HOME_CONTEXT_TYPE), written also to
  `pipeline/.metadata_store_id`; a store whose id differs from the one
  `pipeline/` was written with belongs to another home and is refused;
* a store that is new, or older than `pipeline/` (a backup put back), is
  handled safely: its next execution id is moved past every numbered output
  folder (AUTOINCREMENT's counter in `sqlite_sequence`, which SQLite lets
  programs set), so no folder is ever reused, and the run says so. Earlier
  runs are no longer cached or in lineage; pushed versions stay, and lineage
  traces them from their manifests.

Every other command given a `--home` (`lineage`, `retrain`, `pushed`,
`embed`, `neighbors`, `rollback`) refuses another home's store the same way
before it reads anything (`check_owner`), and only reads: the store is read
through SQLite's read-only mode, so neither it nor the marker is created or
changed.

The local runner also refuses, per execution, to write into an output folder
that exists with files in it (runner_guards.py), whatever the store says.

ml_metadata is imported only where a store is opened: the consumer commands
check a home's store with sqlite3 alone.
"""

import contextlib
import errno
import os
import pathlib
import re
import sqlite3
import uuid
from typing import Optional

from pipelines.local import home as home_lib

HOME_CONTEXT_TYPE = 'tpu_embeddings.Home'
MARKER_FILENAME = '.metadata_store_id'
_SQLITE_MESSAGE = re.compile(r'Error when executing query: (.*?) query:', re.S)


class StoreError(ValueError):
  """metadata.sqlite cannot be used with this home."""


def _unusable(path: str, reason: str) -> StoreError:
  return StoreError(
      f'{path} cannot be opened as ML Metadata ({reason[:200]}); if it is '
      'damaged, move it away (pushed versions are kept, and a new store '
      'is started) or put a backup back')


def open_store(home: str, read_only: bool = False):
  """The home's ML Metadata store (created if missing, unless `read_only`);
  one-line StoreError if it is not a usable SQLite ML Metadata database."""
  from ml_metadata import metadata_store
  from ml_metadata.proto import metadata_store_pb2
  path = home_lib.metadata_path(home)
  modes = metadata_store_pb2.SqliteMetadataSourceConfig
  config = metadata_store_pb2.ConnectionConfig()
  config.sqlite.filename_uri = path
  config.sqlite.connection_mode = (modes.READONLY if read_only else
                                   modes.READWRITE_OPENCREATE)
  try:
    return metadata_store.MetadataStore(config)
  except RuntimeError as e:
    found = _SQLITE_MESSAGE.search(str(e))
    raise _unusable(path, found.group(1) if found else
                    str(e).splitlines()[0]) from None


def _check_writable(path: str):
  """Raises OSError (EROFS or EACCES) naming the file when the store or its
  folder cannot be written: ML Metadata would fail at the first component,
  in a SQL message."""
  for target in (path, os.path.dirname(path)):
    if os.path.exists(target) and not os.access(target, os.W_OK):
      read_only = os.statvfs(target).f_flag & os.ST_RDONLY
      number = errno.EROFS if read_only else errno.EACCES
      raise OSError(number, os.strerror(number), target)


def highest_output(pipeline_root: str) -> int:
  """The highest execution id any output folder under the root is named
  after (0 if none)."""
  highest = 0
  if not os.path.isdir(pipeline_root):
    return 0
  for node in os.scandir(pipeline_root):
    if not node.is_dir():
      continue
    for output in os.scandir(node.path):
      if output.is_dir():
        highest = max([highest] + [int(e.name) for e in os.scandir(
            output.path) if e.name.isdigit()])
  return highest


def _store_id(store) -> Optional[str]:
  try:
    contexts = store.get_contexts_by_type(HOME_CONTEXT_TYPE)
  except Exception:
    return None  # the type does not exist yet
  return contexts[0].name if contexts else None


def _set_store_id(store, store_id: str):
  from ml_metadata.proto import metadata_store_pb2
  type_id = store.put_context_type(
      metadata_store_pb2.ContextType(name=HOME_CONTEXT_TYPE))
  store.put_contexts([metadata_store_pb2.Context(type_id=type_id,
                                                 name=store_id)])


def _next_execution_id(path: str) -> int:
  with sqlite3.connect(path) as db:
    row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = "
                     "'Execution'").fetchone()
  return (row[0] if row else 0) + 1


def _start_executions_after(path: str, highest: int):
  with sqlite3.connect(path) as db:
    if not db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = "
                      "'Execution'", (highest,)).rowcount:
      db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES "
                 "('Execution', ?)", (highest,))


def _read_marker(path: str) -> str:
  if not os.path.exists(path):
    return ''
  with open(path) as f:
    return f.read().strip()


_NO_SCHEMA = object()


def _recorded_read_only(path: str):
  """The store id in the SQLite file at `path`, read without writing
  anything: None when it has none, _NO_SCHEMA without ML Metadata's tables
  (an empty file)."""
  uri = pathlib.Path(path).as_uri() + '?mode=ro'
  try:
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
      tables = {row[0] for row in db.execute(
          "SELECT name FROM sqlite_master WHERE type = 'table'")}
      if not {'Type', 'Context'} <= tables:
        return _NO_SCHEMA
      row = db.execute(
          'SELECT Context.name FROM Context JOIN Type ON Context.type_id = '
          'Type.id WHERE Type.name = ? ORDER BY Context.id LIMIT 1',
          (HOME_CONTEXT_TYPE,)).fetchone()
  except sqlite3.Error as e:
    raise _unusable(path, str(e)) from None
  return row[0] if row else None


def _foreign(p, recorded: str, owner: str) -> StoreError:
  return StoreError(
      f'{p["metadata"]} belongs to another home (store {recorded}; '
      f'{p["pipeline_root"]} was written with store {owner}): put this '
      "home's metadata.sqlite back, or run with a new --home")


def check_owner(home: str) -> bool:
  """For commands that do not run the pipeline: raises StoreError when the
  home's store belongs to another home or is not an ML Metadata database.
  Reads only: nothing is created or changed (a home never paired with its
  store passes). Returns whether the home has a store (False: no file, or
  an empty one)."""
  p = home_lib.paths(home)
  if not os.path.exists(p['metadata']):
    return False
  recorded = _recorded_read_only(p['metadata'])
  if recorded is _NO_SCHEMA:
    return False
  owner = _read_marker(os.path.join(p['pipeline_root'], MARKER_FILENAME))
  if recorded and owner and recorded != owner:
    raise _foreign(p, recorded, owner)
  return True


def check(home: str) -> Optional[str]:
  """Pairs the home's store with its pipeline root (module docstring).

  Returns a note for the run summary when a new or older store was moved
  past existing outputs; raises StoreError for another home's store.
  """
  p = home_lib.paths(home)
  os.makedirs(p['pipeline_root'], exist_ok=True)
  _check_writable(p['metadata'])
  store = open_store(home)
  marker = os.path.join(p['pipeline_root'], MARKER_FILENAME)
  recorded, owner = _store_id(store), _read_marker(marker)
  if recorded and owner and recorded != owner:
    raise _foreign(p, recorded, owner)
  note = None
  highest = highest_output(p['pipeline_root'])
  if highest >= _next_execution_id(p['metadata']):
    _start_executions_after(p['metadata'], highest)
    note = (f'{p["metadata"]} is new or older than the outputs under '
            f'{p["pipeline_root"]}: its executions continue from id '
            f'{highest + 1}, so no earlier output is reused; earlier runs are '
            'no longer cached or in its lineage (pushed versions are kept)')
  if not recorded:
    _set_store_id(store, owner or uuid.uuid4().hex)
  if not owner:
    with open(marker, 'w') as f:
      f.write((_store_id(store) or '') + '\n')
  return note
