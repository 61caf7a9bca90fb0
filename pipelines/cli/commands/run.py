"""`run`: the whole pipeline locally (the main job)."""

import json
import os
import time


# Process start (this module is imported by the CLI before any TensorFlow).
STARTED = time.monotonic()


def add_config_arguments(p):
  p.add_argument('--config',
                 help='JSON file of settings, e.g. {"trainer": {"window": 5}}')
  p.add_argument('--set', action='append', default=[], metavar='NAME=VALUE',
                 help='override one setting (JSON value), e.g. '
                 '--set trainer.train_steps=2000 --set trainer.tpu=\'"auto"\'')
  p.add_argument('--tpu', help='"" = CPU, "auto", or a TPU name')
  p.add_argument('--beam-arg', action='append', default=[],
                 help='Beam pipeline argument, e.g. --beam-arg=--runner=...')


def config_from_args(args):
  """PipelineConfig from --config, --set and --tpu."""
  from pipelines import config as config_lib  # pylint: disable=g-import-not-at-top
  values = {}
  if args.config:
    if not os.path.exists(args.config):
      raise FileNotFoundError(f'--config {args.config}: no such file')
    with open(args.config, 'rb') as f:
      raw = f.read()
    try:
      loaded = json.loads(raw.decode('utf-8'))
    except UnicodeDecodeError as e:
      raise ValueError(f'--config {args.config}: not UTF-8 text: {e}') from e
    except json.JSONDecodeError as e:
      raise ValueError(f'--config {args.config}: not valid JSON: {e}') from e
    if not isinstance(loaded, dict):
      raise ValueError(f'--config {args.config}: expected a JSON object of '
                       f'settings, got {type(loaded).__name__}')
    values.update(loaded)
  for item in args.set:
    field, sep, raw = item.partition('=')
    if not sep:
      raise ValueError(f'--set {item!r}: expected FIELD=VALUE')
    try:
      values[field] = json.loads(raw)
    except json.JSONDecodeError:
      values[field] = raw
  if args.tpu is not None:
    values['trainer.tpu'] = args.tpu
  return config_lib.PipelineConfig.from_dict(values)


def check_data_root(data_root: str):
  """Before TFX is imported and before anything is created under --home."""
  if not os.path.isdir(data_root):
    raise FileNotFoundError(f'data root {data_root} is not a directory; '
                            'create it with `python -m pipelines demo-data`')


def register(sub):
  p = sub.add_parser('run', help='run the pipeline locally')
  p.add_argument('--data', required=True, help='data root with span-N/ folders')
  p.add_argument('--home', required=True,
                 help='metadata.sqlite, pipeline/ and pushed/ go here')
  p.add_argument('--neighbors', type=int, default=3, metavar='N',
                 help='print nearest neighbours of N tokens from the pushed '
                 'model (0: none)')
  p.add_argument('--verbose', action='store_true', help='full TFX logs')
  add_config_arguments(p)
  p.set_defaults(func=run)


def run(args) -> int:
  from pipelines import config as config_lib  # pylint: disable=g-import-not-at-top
  config = config_from_args(args)
  check_data_root(args.data)
  if args.neighbors < 0:
    raise ValueError(f'--neighbors must be >= 0, got {args.neighbors}')
  print(f'running pipeline {config_lib.PIPELINE_NAME} on {args.data} '
        f'(home {os.path.abspath(args.home)})', flush=True)
  from pipelines.local import runner as local_runner  # pylint: disable=g-import-not-at-top
  summary = local_runner.run(args.data, args.home, config,
                             beam_pipeline_args=args.beam_arg or None,
                             verbose=args.verbose)
  summary['timing']['total_seconds'] = round(time.monotonic() - STARTED, 1)
  print(local_runner.format_summary(summary))
  if args.neighbors and summary.get('pushed_version') is not None:
    print_neighbors(local_runner.paths(args.home)['push_root'], args.neighbors,
                    version=summary['pushed_version'])
  return 0


def print_neighbors(push_root: str, n: int, k: int = 5, version=None):
  """Nearest neighbours of `n` tokens spread over the pushed vocabulary of
  `version` (this run's push; the latest version without it)."""
  from tpu_embeddings.push_root import layout as push_layout  # pylint: disable=g-import-not-at-top
  from components.validator import baseline  # pylint: disable=g-import-not-at-top
  from tpu_embeddings.push_root import consumer  # pylint: disable=g-import-not-at-top
  version, model = consumer.load_serving(push_root, version)
  tokens = baseline.read_tokens(
      push_layout.version_dir(push_root, 'serving', version))
  print(f'nearest neighbours (pushed version {version}):')
  for token in tokens[::max(1, len(tokens) // n)][:n]:
    # The `neighbors` signature leaves out the query token itself.
    _, found = consumer.neighbors(push_root, token, k=k, version=version,
                                  loaded=model)
    print(f'  {token:<16} ' + '  '.join(f'{t} {s:.2f}' for t, s in found))
