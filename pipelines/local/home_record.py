"""What a home remembers of its model: the module file and the settings.

`run` and `retrain` write `<home>/home.json` (home.record_path) after each
run that completes, whole or not at all:

    {"module_file": "/abs/path/model.py",   '' for skip-gram
     "module_sha256": "...", "module_source": "<its text when recorded>",
     "settings": {"example_gen.format": "csv", "batch_size": 128, ...}}

`settings` are those of `--config`, `--set` and `--tpu`, flat: the data
format among them when given (`example_gen.format`; one set by the module's
SETTINGS comes with the module, and is not pinned when the model changes).
A later `run`, `retrain` or `compile --home` takes what it is not given
from there and says so in one line; what it is given wins, setting by
setting, and is recorded in turn (`compile` records nothing). A run that
fails records nothing.

A recorded module file is read again from its path, never from the copy:
  * changed since it was recorded, it is used (it is the user's current
    code) and the line says so: its dense part cannot be seeded from a model
    of other code, so the dense part starts cold (the warm start compares the
    modules' SHA-256), while tables of the same spec still warm-start;
  * gone, the run stops with an error naming it and `--module-file`: running
    the copy would train code the user can no longer see or change.
The copy and its SHA-256 say what the home was trained with. To go back to
skip-gram from a module file, use another home.
"""

import dataclasses
import hashlib
import json
import os
from typing import Any, Dict, Mapping, Optional, Tuple

from pipelines import whole_file
from pipelines.local import home as home_lib


@dataclasses.dataclass(frozen=True)
class Record:
  module_file: str = ''
  module_sha256: str = ''
  module_source: str = ''
  settings: Dict[str, Any] = dataclasses.field(default_factory=dict)


def _sha256(text: bytes) -> str:
  return hashlib.sha256(text).hexdigest()


def of_run(module_file: str, settings: Mapping[str, Any]) -> Record:
  """The record of a run of `module_file` ('' for skip-gram) with the flat
  `settings` it was given."""
  source = b''
  if module_file:
    with open(module_file, 'rb') as f:
      source = f.read()
  return Record(
      module_file=os.path.abspath(module_file) if module_file else '',
      module_sha256=_sha256(source) if module_file else '',
      module_source=source.decode('utf-8', errors='replace'),
      settings=dict(settings))


def write(home: str, record: Record):
  whole_file.write(home_lib.record_path(home),
                   json.dumps(dataclasses.asdict(record), indent=2) + '\n')


def read(home: str) -> Optional[Record]:
  """The home's record; None when it has none. A damaged one is refused in
  one line naming the file."""
  path = home_lib.record_path(home)
  if not os.path.exists(path):
    return None
  fix = 'delete it and give --module-file, --config and --set again'
  try:
    with open(path, 'rb') as f:
      loaded = json.loads(f.read().decode('utf-8'))
    record = Record(**loaded)
  except (UnicodeDecodeError, json.JSONDecodeError, TypeError) as e:
    raise ValueError(f'home record {path} is damaged ({e}); {fix}') from None
  if not (all(isinstance(getattr(record, f), str) for f in (
      'module_file', 'module_sha256', 'module_source'))
          and isinstance(record.settings, dict)):
    raise ValueError(f'home record {path} is damaged (a field of the wrong '
                     f'type); {fix}')
  return record


def merge(record: Optional[Record], module_file: str,
          settings: Mapping[str, Any]) -> Tuple[str, Dict[str, Any], str]:
  """(module file, flat settings, note) of a run given `module_file` ('' for
  none given) and the flat `settings`, over `record`. The note says what is
  reused ('' when nothing is); a recorded module file that is gone raises.
  """
  if record is None:
    return module_file, dict(settings), ''
  reused = []
  if not module_file and record.module_file:
    module_file = record.module_file
    if not os.path.isfile(module_file):
      raise FileNotFoundError(
          f'module file {module_file}, recorded by an earlier run in this '
          'home, no longer exists; give the model with --module-file PATH')
    with open(module_file, 'rb') as f:
      changed = _sha256(f.read()) != record.module_sha256
    reused.append(f'module file {module_file}' + (
        ' (changed since it was recorded: the dense part starts cold)'
        if changed else ''))
  kept = {k: v for k, v in record.settings.items() if k not in settings}
  reused += [f'{k}={json.dumps(v)}' for k, v in kept.items()]
  note = ('reusing what the home records: ' + ', '.join(reused)
          if reused else '')
  return module_file, {**kept, **settings}, note
