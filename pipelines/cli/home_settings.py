"""The model and settings of `run` and `retrain`: those given, over what
the home records of its earlier runs (pipelines/local/home_record.py)."""

import dataclasses
from typing import Any, Dict

from pipelines.cli import arguments
from pipelines.local import home_record


@dataclasses.dataclass(frozen=True)
class HomeSettings:
  config: Any  # PipelineConfig
  module_file: str  # '' for skip-gram
  settings: Dict[str, Any]  # flat, as given or reused


def resolve(args, command: str) -> HomeSettings:
  """What `command` runs with in `args.home`; prints one line naming what
  it reuses from the home's record."""
  module_file, settings, note = home_record.merge(
      home_record.read(args.home), args.module_file,
      arguments.given_settings(args))
  config = arguments.config_of(settings, module_file)
  if note:
    print(f'{command}: {note}', flush=True)
  return HomeSettings(config, module_file, settings)


def record(home: str, resolved: HomeSettings):
  """After a completed run: the home remembers its model and settings."""
  home_record.write(home, home_record.of_run(resolved.module_file,
                                             resolved.settings))
