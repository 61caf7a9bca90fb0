"""What a module file changes in the pipeline's settings.

* SETTINGS of the module: settings the model trains well with, below the
  user's `--set` and `--config` (`with_module_defaults`);
* the vocabularies VocabularyGen counts: one per vocabulary named in
  FEATURES, with the features mapped to it (`for_module`);
* the trainer's spec comes from the module: `table.*` and
  `trainer.embedding_spec` (skip-gram's) are refused with it.
"""

from typing import Any, Dict, Mapping

from pipelines.config import PipelineConfig


def load(module_file: str):
  """The checked module (a one-line error names what is wrong)."""
  from components import module_file as module_file_lib
  return module_file_lib.from_exec_properties(
      {module_file_lib.MODULE_FILE_KEY: module_file})


def vocabularies(features: Mapping[str, str]) -> Dict[str, list]:
  """{vocabulary: [features]} of a module's FEATURES."""
  found: Dict[str, list] = {}
  for feature, vocabulary in sorted(features.items()):
    found.setdefault(vocabulary, []).append(feature)
  return found


def with_module_defaults(user_values: Mapping[str, Any],
                         module_file: str) -> PipelineConfig:
  """The config of the user's values over the module's SETTINGS."""
  defaults = load(module_file).settings if module_file else {}
  return PipelineConfig.from_dict({**defaults,
                                   **PipelineConfig.flat(user_values)})


def for_module(config: PipelineConfig, module_file: str) -> PipelineConfig:
  """`config` with the vocabularies of the module's FEATURES (unchanged
  for skip-gram)."""
  if not module_file:
    return config
  if config.trainer.embedding_spec or config.table != type(config.table)():
    raise ValueError('pipeline config: table.* and trainer.embedding_spec '
                     'are skip-gram\'s; a module file defines its tables in '
                     'embedding_spec(ctx)')
  module = load(module_file)
  if not module.features:
    return config
  return config.replace(
      **{'vocabulary.vocabularies': vocabularies(module.features)})
