"""Arguments several commands share: settings, data root, push root."""

import json
import os

from pipelines import model_settings
from pipelines.local import home as home_lib
from pipelines.local import retrain as retrain_lib
from pipelines.local import store_guard
from tpu_embeddings.push_root import layout as push_layout


def add_config_arguments(p):
  p.add_argument('--module-file', default='',
                 help='the model\'s module file (TFX\'s module_file: '
                 'FEATURES, embedding_spec, model_fn, loss_fn, signatures, '
                 '...; see the README); default: skip-gram')
  p.add_argument('--config',
                 help='JSON file of settings, e.g. {"trainer": {"window": 5}}')
  p.add_argument('--set', action='append', default=[], metavar='NAME=VALUE',
                 help='override one setting (JSON value), e.g. '
                 '--set trainer.train_steps=2000 --set trainer.tpu=\'"auto"\'')
  p.add_argument('--tpu', help='"" = CPU, "auto", or a TPU name')
  p.add_argument('--beam-arg', action='append', default=[],
                 help='Beam pipeline argument, e.g. --beam-arg=--runner=...')


def settings_of(items) -> dict:
  """`--set FIELD=VALUE` items as {field: value}: a JSON value where it
  parses, else the text."""
  values = {}
  for item in items:
    field, sep, raw = item.partition('=')
    if not sep:
      raise ValueError(f'--set {item!r}: expected FIELD=VALUE')
    try:
      values[field] = json.loads(raw)
    except json.JSONDecodeError:
      values[field] = raw
  return values


def config_from_args(args):
  """PipelineConfig from --config, --set and --tpu, over the SETTINGS of
  --module-file."""
  return config_of(given_settings(args), args.module_file)


def config_of(values, module_file: str, source: str = model_settings.GIVEN):
  """PipelineConfig of the settings `values` over the SETTINGS of
  `module_file`; one the model does not use is refused, naming `source`."""
  return model_settings.with_module_defaults(values, module_file, source)


def given_settings(args) -> dict:
  """The settings of --config, --set and --tpu, flat ({"trainer.window": 5}),
  in the order they apply; --module-file is checked to exist."""
  if args.module_file and not os.path.isfile(args.module_file):
    raise FileNotFoundError(f'--module-file {args.module_file}: no such file')
  values = config_file_settings(args.config) if args.config else {}
  values.update(settings_of(args.set))
  if args.tpu is not None:
    values['trainer.tpu'] = args.tpu
  return values


def config_file_settings(path: str) -> dict:
  """The settings of a --config JSON file, flat ({"trainer.window": 5})."""
  from pipelines.config import PipelineConfig
  if not os.path.exists(path):
    raise FileNotFoundError(f'--config {path}: no such file')
  with open(path, 'rb') as f:
    raw = f.read()
  try:
    loaded = json.loads(raw.decode('utf-8'))
  except UnicodeDecodeError as e:
    raise ValueError(f'--config {path}: not UTF-8 text: {e}') from e
  except json.JSONDecodeError as e:
    raise ValueError(f'--config {path}: not valid JSON: {e}') from e
  if not isinstance(loaded, dict):
    raise ValueError(f'--config {path}: expected a JSON object of '
                     f'settings, got {type(loaded).__name__}')
  return PipelineConfig.flat(loaded)


def check_model(config, module_file: str):
  """The model contract, checked as a command starts, before TFX does;
  its lines say what was checked and warn."""
  from pipelines import model_contract
  for line in model_contract.check(config, module_file):
    print(line, flush=True)


def check_data_root(data_root: str, pattern: str):
  """Before TFX is imported and before anything is created under --home."""
  if not os.path.isdir(data_root):
    raise FileNotFoundError(f'data root {data_root} is not a directory; '
                            'create it with `python -m pipelines demo-data`')
  retrain_lib.check_span_folders(data_root, pattern)


def check_input_files(data_root: str, example_gen):
  """A span folder holds the files the ExampleGen of `example_gen` (its
  config) reads: text files, or the stock formats' train/ and eval/ ones."""
  from pipelines import stock_example_gen
  patterns = ([example_gen.pattern] if example_gen.format == 'text' else
              list(stock_example_gen.split_patterns(
                  example_gen.pattern).values()))
  retrain_lib.check_span_files(data_root, patterns)


def add_root_arguments(parser):
  """`--home DIR` (local runner home) or `--push-root PATH` (any filesystem)."""
  group = parser.add_mutually_exclusive_group(required=True)
  group.add_argument('--home', help='local pipeline home; reads DIR/pushed')
  group.add_argument('--push-root',
                     help='push root itself, e.g. gs://bucket/embeddings')


def root_from_args(args) -> str:
  """The push root; a `--home` whose metadata.sqlite belongs to another home
  is refused (read only: nothing in the home is created or changed)."""
  if args.push_root:
    return push_layout.check_root(args.push_root)
  store_guard.check_owner(args.home)
  return push_layout.check_root(home_lib.push_root(args.home))
