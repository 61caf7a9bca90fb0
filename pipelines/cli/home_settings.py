"""The model and settings of `run`, `retrain` and `compile`: those given,
over what the home records of its earlier runs
(pipelines/local/home_record.py)."""

import dataclasses
from typing import Any, Dict

from pipelines import model_settings
from pipelines.cli import arguments
from pipelines.local import home as home_lib
from pipelines.local import home_record


@dataclasses.dataclass(frozen=True)
class HomeSettings:
  config: Any  # PipelineConfig
  module_file: str  # '' for skip-gram
  settings: Dict[str, Any]  # flat, as given or reused


def resolve(args, command: str) -> HomeSettings:
  """What `command` runs with in `args.home` (None: no home, only what is
  given); prints one line naming what it reuses from the home's record."""
  record = home_record.read(args.home) if args.home else None
  module_file, settings, note = home_record.merge(
      record, args.module_file, arguments.given_settings(args))
  source = model_settings.GIVEN
  if record is not None and record.settings:
    source += f', or from {home_lib.record_path(args.home)}'
  config = arguments.config_of(settings, module_file, source)
  if note:
    print(f'{command}: {note}', flush=True)
  return HomeSettings(config, module_file, settings)


def record(home: str, resolved: HomeSettings):
  """After a completed run: the home remembers its model and settings."""
  home_record.write(home, home_record.of_run(resolved.module_file,
                                             resolved.settings))
