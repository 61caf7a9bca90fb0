"""What a module file changes in the pipeline's settings.

* SETTINGS of the module: settings the model trains well with, below the
  user's `--set` and `--config` (`with_module_defaults`);
* the settings the model does not use are refused, from the user and from
  its SETTINGS alike, before anything runs (`unused_settings`): a setting
  that changes nothing would re-push an identical model;
* the vocabularies VocabularyGen counts: one per vocabulary named in
  FEATURES, with the features mapped to it (`for_module`).
"""

from typing import Any, Dict, Mapping

from components.exporter.config import ExporterConfig
from pipelines.config import PipelineConfig
from tpu_embeddings.models import exported_table
from tpu_embeddings.models.skipgram_config import SKIPGRAM_SETTINGS
from tpu_embeddings.training.config import TableConfig
from tpu_embeddings.validation.gates import ABSOLUTE_LIMITS

# The declaration listing which of SKIPGRAM_SETTINGS a model's code reads.
SETTINGS_READ = 'SETTINGS_READ'
# Where the user gives settings, named when one is refused.
GIVEN = '--set and --config'


def load(module_file: str):
  """The checked module (a one-line error names what is wrong)."""
  from components import module_file as module_file_lib
  return module_file_lib.from_exec_properties(
      {module_file_lib.MODULE_FILE_KEY: module_file})


def _settings_read(module) -> tuple:
  read = module.declared(SETTINGS_READ, ())
  if not isinstance(read, (list, tuple)) or not set(read) <= set(
      SKIPGRAM_SETTINGS):
    raise ValueError(f'module file {module.path}: {SETTINGS_READ} must list '
                     f'settings among {", ".join(SKIPGRAM_SETTINGS)}, got '
                     f'{read!r}')
  return tuple(read)


def unused_settings(module) -> Dict[str, str]:
  """{"section.field": what it applies to} of the settings `module` does not
  use, as the module declares itself:
    * those made for skip-gram that it does not list in SETTINGS_READ;
    * table.* and trainer.embedding_spec, unless SPEC_FROM_SETTINGS;
    * exporter.*, unless it declares `exported_table` (they shape that
      export's Hub module);
    * the absolute limit of a metric it does not declare in METRICS.
  The built-in skip-gram declares all of these: it uses every setting."""
  read = _settings_read(module)
  unused = {name: 'applies only to a model that reads it, the built-in '
            f'skip-gram (a module file whose code reads it lists it in '
            f'{SETTINGS_READ})' for name in SKIPGRAM_SETTINGS
            if name not in read}
  if not module.declared('SPEC_FROM_SETTINGS', False):
    for name in ['trainer.embedding_spec'] + [
        f'table.{field}' for field in TableConfig.names()]:
      unused[name] = ('sets the built-in skip-gram\'s table; a module file '
                      'defines its tables in embedding_spec(ctx)')
  if not module.declared(exported_table.NAME):
    for field in ExporterConfig.names():
      unused[f'exporter.{field}'] = (
          'applies only to a model that exports a table as text embeddings '
          f'({exported_table.NAME}, as the built-in skip-gram does)')
  for field, metric in ABSOLUTE_LIMITS.items():
    if metric not in module.metrics:
      unused[f'validator.{field}'] = (
          f'limits metric {metric!r}, which the model does not declare in '
          'METRICS')
  return unused


def uses(module_file: str, setting: str) -> bool:
  """Whether the model of `module_file` ('' for skip-gram) uses `setting`
  ("section.field")."""
  return setting not in unused_settings(load(module_file))


def refuse_unused(values: Mapping[str, Any], module, source: str):
  """A one-line ValueError for the first of the flat `values` that `module`
  does not use, naming the setting, why, and `source` (where it was given).
  """
  unused = unused_settings(module)
  for name in values:
    for setting in PipelineConfig.located(name):
      if setting in unused:
        raise ValueError(f'{setting} {unused[setting]}; module file '
                         f'{module.path} does not use it: remove it from '
                         f'{source}')


def changed(config: PipelineConfig) -> Dict[str, Any]:
  """{"section.field": value} of the settings of `config` that differ
  from their defaults."""
  found = {}
  for section, default in PipelineConfig.sections().items():
    for field in default.names():
      value = getattr(getattr(config, section), field)
      if value != getattr(default, field):
        found[f'{section}.{field}'] = value
  return found


def vocabularies(features: Mapping[str, str]) -> Dict[str, list]:
  """{vocabulary: [features]} of a module's FEATURES."""
  found: Dict[str, list] = {}
  for feature, vocabulary in sorted(features.items()):
    found.setdefault(vocabulary, []).append(feature)
  return found


def with_module_defaults(user_values: Mapping[str, Any], module_file: str,
                         source: str = GIVEN) -> PipelineConfig:
  """The config of the user's values over the module's SETTINGS; a setting
  the module does not use, in either, is refused (`source`: where the
  user's values were given)."""
  values = PipelineConfig.flat(user_values)
  if not module_file:
    return PipelineConfig.from_dict(values)
  module = load(module_file)
  defaults = PipelineConfig.flat(module.settings)
  refuse_unused(defaults, module, 'its SETTINGS')
  refuse_unused(values, module, source)
  return PipelineConfig.from_dict({**defaults, **values})


def for_module(config: PipelineConfig, module_file: str) -> PipelineConfig:
  """`config` with the vocabularies of the module's FEATURES (unchanged
  for skip-gram)."""
  if not module_file:
    return config
  module = load(module_file)
  refuse_unused(changed(config), module, 'the pipeline config')
  if not module.features:
    return config
  return config.replace(
      **{'vocabulary.vocabularies': vocabularies(module.features)})
