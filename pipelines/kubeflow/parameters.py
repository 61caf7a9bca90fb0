"""The compiled pipeline's run-time parameters, and the values a run sets.

Each is a STRING pipeline parameter whose default is the compiled value:

    data_root           the ExampleGen's corpus root (span-N/ folders)
    push_root           where the pusher publishes; the trainer's warm start
                        and the validator's baseline read it too
    vocabulary_config   the JSON config of one component, as `--set` left it
    trainer_config      at compile time (components/*/config.py name the
    validator_config    fields)
    exporter_config
    pusher_config

At submit time (`--param NAME=VALUE`) a config parameter takes a JSON object
merged over the compiled config, or one field as `NAME.FIELD=VALUE`:

    --param trainer_config.train_steps=20000
    --param trainer_config='{"batch_size": 4096, "window": 5}'

and the merged config is checked as the component checks it. What sizes the
pods or picks the node pool is fixed at compile time: FIXED names those
fields; change them with `compile --set ...`. Importable without TensorFlow
or TFX.
"""

import json
from typing import Any, Dict, Iterable, Mapping, Optional

from components.exporter.config import ExporterConfig
from components.pusher.config import PusherConfig
from components.vocabulary.config import VocabularyConfig
from pipelines.kubeflow import credentials
from pipelines.kubeflow import flags as kubeflow_flags
from pipelines.kubeflow import resources as resources
from tpu_embeddings.training.config import TrainerConfig
from tpu_embeddings.validation.config import ValidatorConfig

DATA_ROOT = 'data_root'
PUSH_ROOT = 'push_root'
# Parameter -> (task whose `config` it is, that config's class).
CONFIG_PARAMETERS = {
    'vocabulary_config': (resources.VOCABULARY, VocabularyConfig),
    'trainer_config': (resources.TRAINER, TrainerConfig),
    'validator_config': (resources.VALIDATOR, ValidatorConfig),
    'exporter_config': (resources.EXPORTER, ExporterConfig),
    'pusher_config': (resources.PUSHER, PusherConfig),
}
PARAMETERS = (DATA_ROOT, PUSH_ROOT) + tuple(CONFIG_PARAMETERS)
# A config parameter is its section's name ('trainer') and this.
CONFIG_SUFFIX = '_config'
# (parameter, field) -> why a run may not change it.
FIXED = {
    ('trainer_config', 'tpu'): 'it follows the node pool of --tpu-accelerator',
    ('trainer_config', 'embedding_spec'): 'the table sizes the pods',
    ('vocabulary_config', 'max_tokens'): 'the table sizes the pods',
}

_TYPES = {'STRING': str, 'NUMBER_INTEGER': int, 'NUMBER_DOUBLE': float,
          'BOOLEAN': bool}


def _decode(raw: Any) -> Any:
  if not isinstance(raw, str):
    return raw
  try:
    return json.loads(raw)
  except json.JSONDecodeError:
    return raw


def _typed(name: str, kind: str, value: Any) -> Any:
  """`value` (a CLI string or a Python value) as parameter type `kind`."""
  want = _TYPES.get(kind)
  if want is None:  # STRUCT / LIST
    value = _decode(value)
    if not isinstance(value, (dict, list)):
      raise ValueError(f'--param {name}: expected JSON ({kind}), got {value!r}')
    return value
  if want is not str and isinstance(value, str):
    value = _decode(value)
  if want is float and isinstance(value, int) and not isinstance(value, bool):
    value = float(value)
  if not isinstance(value, want) or (want is not bool and
                                     isinstance(value, bool)):
    raise ValueError(f'--param {name}: expected {kind}, got {value!r}')
  if name in (DATA_ROOT, PUSH_ROOT):
    kubeflow_flags.check_uri(f'--param {name}', value)
  return value


def compiled_config(name: str, config_json: str,
                    unused: Iterable[str]) -> str:
  """The compiled default of config parameter `name`: `config_json`
  without the settings ("section.field") in `unused`, those the model does
  not use (pipelines/model_settings.py), which a run may not set either."""
  section = name[:-len(CONFIG_SUFFIX)]
  values = json.loads(config_json)
  return json.dumps({field: value for field, value in values.items()
                     if f'{section}.{field}' not in set(unused)},
                    sort_keys=True)


def _merged_config(name: str, default: Optional[str],
                   changes: list) -> str:
  """The compiled config JSON of parameter `name` with `changes` applied;
  only the fields compiled in (those the model uses) may change."""
  _, config_class = CONFIG_PARAMETERS[name]
  values = json.loads(default) if default else {}
  compiled = dict(values)
  for field, value in changes:
    if field is None:
      value = _decode(value)
      if not isinstance(value, dict):
        raise ValueError(f'--param {name}: expected a JSON object of '
                         f'{config_class.WHAT} settings, got {value!r}')
      values.update(value)
    else:
      values[field] = _decode(value)
  try:
    checked = config_class.from_dict(values)
  except ValueError as e:
    raise ValueError(f'--param {name}: {e}') from None
  not_compiled = sorted(set(values) - set(compiled))
  if not_compiled:
    raise ValueError(f'--param {name}.{not_compiled[0]}: the compiled model '
                     'does not use it (the package carries only the settings '
                     'its model uses)')
  # Kubeflow Pipelines stores and shows a run's parameters.
  credentials.check_custom_config(getattr(checked, 'custom_config', None),
                                  f'--param {name} custom_config')
  for field in compiled:
    reason = FIXED.get((name, field))
    if reason and getattr(checked, field) != compiled.get(field):
      raise ValueError(f'--param {name}.{field}: fixed when compiling '
                       f'({reason}); recompile with --set instead')
  return json.dumps({field: value for field, value in json.loads(
      checked.to_json()).items() if field in compiled}, sort_keys=True)


def check_arguments(declared: Mapping[str, Any], types: Mapping[str, str],
                    arguments: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
  """The run's parameter values, typed and checked; one line per mistake.

  declared: parameter -> compiled default; types: parameter -> KFP type.
  arguments: NAME or NAME.FIELD (config parameters) -> value.
  """
  out: Dict[str, Any] = {}
  config_changes: Dict[str, list] = {}
  for key, value in (arguments or {}).items():
    name, dot, field = key.partition('.')
    if name not in declared:
      known = ', '.join(sorted(declared)) or 'none'
      raise ValueError(f'--param {key}: the pipeline has no such parameter '
                       f'(parameters: {known})')
    if name in CONFIG_PARAMETERS:
      config_changes.setdefault(name, []).append((field if dot else None,
                                                  value))
    elif dot:
      raise ValueError(f'--param {key}: {name} is not a config parameter; '
                       f'give --param {name}=VALUE')
    else:
      out[name] = _typed(name, types.get(name, 'STRING'), value)
  for name, changes in config_changes.items():
    out[name] = _merged_config(name, declared[name], changes)
  return out
