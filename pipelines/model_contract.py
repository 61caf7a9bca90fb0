"""The model contract checked as a command starts, before any component.

`run`, `retrain` (when it runs) and `compile` check the module file on a
tiny untrained instance (`tpu_embeddings.training.contract_check`): a
broken contract is one line naming the user's module file, before TFX
starts, anything is written into the home or a whole training run is spent.
"""

import time
from typing import List

from pipelines import model_settings
from pipelines.config import PipelineConfig


def trainer_settings(config: PipelineConfig, module_file: str):
  """The TrainerConfig the trainer is given: a module file's spec is its
  own; skip-gram's comes from `table.*` (or trainer.embedding_spec)."""
  return config.trainer if module_file else config.trainer_config()


def check(config: PipelineConfig, module_file: str) -> List[str]:
  """Raises the one-line error of a broken contract; else the lines to
  print: warnings, and what was checked (nothing for skip-gram)."""
  from tpu_embeddings.training import contract_check
  started = time.monotonic()
  module = model_settings.load(module_file)
  checked = contract_check.check(module, trainer_settings(config,
                                                          module_file))
  lines = [f'warning: {w}' for w in checked.warnings]
  if checked.signatures:
    lines.append(f'module file {module.path}: contract checked on an '
                 f'untrained model (signatures '
                 f'{", ".join(checked.signatures)}; '
                 f'{time.monotonic() - started:.1f} s)')
  return lines
