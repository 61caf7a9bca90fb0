"""Commands that run the pipeline locally: demo-data, run, retrain, lineage."""

import dataclasses
import json
import os
import sys
import time

from pipelines import demo_data
from pipelines import demo_interactions
from pipelines import demo_ratings
from pipelines.cli import arguments
from pipelines.cli import failures
from pipelines.cli import home_settings
from pipelines.local import home as home_lib
from pipelines.local import retrain as retrain_lib
from pipelines.local import store_guard
from tpu_embeddings.core import import_gc

# Process start (this module is imported by the CLI before any TensorFlow).
STARTED = time.monotonic()


def register(sub):
  _register_demo_data(sub)
  _register_run(sub)
  _register_retrain(sub)
  _register_lineage(sub)


# -- demo-data: write the synthetic demo corpus.

def _register_demo_data(sub):
  p = sub.add_parser('demo-data', help='write a synthetic demo corpus')
  p.add_argument('--out', required=True, help='output directory')
  p.add_argument('--spans', type=int, default=2, help='number of spans')
  p.add_argument('--first-span', type=int, default=1,
                 help='number of the first span written (to add spans later)')
  p.add_argument('--seed', type=int, default=0,
                 help='random seed; the same seed writes the same corpus '
                 '(default 0)')
  p.add_argument('--lines-per-span', type=int,
                 default=demo_data.CorpusShape.lines_per_span,
                 help='sentences per span (default '
                 f'{demo_data.CorpusShape.lines_per_span})')
  kind = p.add_mutually_exclusive_group()
  kind.add_argument('--interactions', choices=demo_interactions.FORMATS,
                 nargs='?', const='csv', default=None,
                 help='write user-item interactions for a recommendation '
                 'model instead (e.g. examples/two_tower): pre-split '
                 'train/eval spans as csv (the default) or tfrecord; run '
                 'them with --set example_gen.format=<the same>')
  kind.add_argument('--ratings', action='store_true',
                 help='write user-item ratings for a rating model instead '
                 '(examples/rating): pre-split train/eval csv spans with '
                 'integer ids; run them with --set example_gen.format=csv')
  p.set_defaults(func=run_demo_data)


def run_interaction_data(args) -> int:
  shape = demo_interactions.EXAMPLE_SHAPE
  for span in range(args.first_span, args.first_span + args.spans):
    shape = dataclasses.replace(shape, seed=args.seed + span - 1)
    written = demo_interactions.write_examples(args.out, shape, span,
                                               args.interactions)
    print(f'wrote span {span}: ' + ', '.join(
        f'{split} {path}' for split, path in written.items()))
  return 0


def run_rating_data(args) -> int:
  for span in range(args.first_span, args.first_span + args.spans):
    shape = demo_ratings.Shape(seed=args.seed + span - 1)
    written = demo_ratings.write_examples(args.out, shape, span)
    print(f'wrote span {span}: ' + ', '.join(
        f'{split} {path}' for split, path in written.items()))
  return 0


def run_demo_data(args) -> int:
  if args.interactions:
    return run_interaction_data(args)
  if args.ratings:
    return run_rating_data(args)
  shape = demo_data.CorpusShape(lines_per_span=args.lines_per_span)
  demo_data.generate(args.out, spans=args.spans, seed=args.seed,
                     first_span=args.first_span, shape=shape)
  spans = range(args.first_span, args.first_span + args.spans)
  print(f'wrote spans {", ".join(map(str, spans))} '
        f'({shape.lines_per_span} lines each) and '
        f'{os.path.join(args.out, demo_data.RELATED_PAIRS_FILENAME)}')
  return 0


# -- run: the whole pipeline locally (the main job).

def _register_run(sub):
  p = sub.add_parser('run', help='run the pipeline locally')
  _add_pipeline_arguments(
      p, home_help='metadata.sqlite, pipeline/ and pushed/ go here')
  p.add_argument('--neighbors', type=int, default=3, metavar='N',
                 help='print nearest neighbours of N tokens from the pushed '
                 'model (0: none)')
  p.set_defaults(func=run_run)


def _add_pipeline_arguments(p, home_help: str):
  """What `run` and `retrain` share: data root, home, logs, settings."""
  p.add_argument('--data', required=True, help='data root with span-N/ folders')
  p.add_argument('--home', required=True, help=home_help)
  p.add_argument('--verbose', action='store_true', help='full TFX logs')
  arguments.add_config_arguments(p)


def _runner():
  """`pipelines.local.runner`, imported (TensorFlow, TFX, Beam: most of a
  run's start-up) with the garbage collector paused (`import_gc`)."""
  with import_gc.paused():
    from pipelines.local import runner
  return runner


def run_run(args) -> int:
  from pipelines import config as config_lib
  resolved = home_settings.resolve(args, 'run')
  config = resolved.config
  arguments.check_data_root(args.data, config.example_gen.pattern)
  if args.neighbors < 0:
    raise ValueError(f'--neighbors must be >= 0, got {args.neighbors}')
  arguments.check_input_files(args.data, config.example_gen)
  local_runner = _runner()
  arguments.check_model(config, resolved.module_file)
  print(f'running pipeline {config_lib.PIPELINE_NAME} on {args.data} '
        f'(home {os.path.abspath(args.home)})', flush=True)
  summary = local_runner.run(args.data, args.home, config,
                             beam_pipeline_args=args.beam_arg or None,
                             verbose=args.verbose,
                             module_file=resolved.module_file)
  home_settings.record(args.home, resolved)
  summary['timing']['total_seconds'] = round(time.monotonic() - STARTED, 1)
  print(local_runner.format_summary(summary))
  if summary.get('pushed_version') is None:
    return verdict_code(summary)
  from tpu_embeddings.artifacts import serving_contract
  from tpu_embeddings.push_root import consumer
  push_root = home_lib.push_root(args.home)
  version, model = consumer.load_serving(push_root, summary['pushed_version'])
  # What the model declares: its neighbours, else what it answers.
  if serving_contract.NEIGHBORS not in model.signatures:
    print_signatures(push_root, version, model)
  elif args.neighbors:
    print_neighbors(push_root, args.neighbors, version=version, model=model)
  return 0


def verdict_code(summary) -> int:
  """The exit code of a run that ended with `summary`: EXIT_NOT_BLESSED, after
  one line on stderr saying which gates refused the model, when validation
  did not bless it (nothing was pushed); else 0."""
  if summary.get('blessed') is not False:
    return 0
  from pipelines.local import summary_notes
  print('error: the model was not blessed, nothing was pushed: '
        f'{summary_notes.refused_by(summary)}', file=sys.stderr, flush=True)
  return failures.EXIT_NOT_BLESSED


def print_signatures(push_root: str, version: int, model):
  """What the pushed serving model (loaded: `model`) answers."""
  from tpu_embeddings.push_root import layout as push_layout
  path = push_layout.version_dir(push_root, push_layout.SERVED, version)
  print(f'serving signatures (pushed version {version}, {path}):')
  for name, fn in sorted(model.signatures.items()):
    inputs = ', '.join(sorted(fn.structured_input_signature[1]))
    outputs = ', '.join(sorted(fn.structured_outputs))
    print(f'  {name}({inputs}) -> {outputs}')


def print_neighbors(push_root: str, n: int, version: int, model, k: int = 5):
  """Nearest neighbours of `n` tokens spread over the vocabulary of pushed
  `version` (loaded: `model`)."""
  from tpu_embeddings.push_root import consumer
  from tpu_embeddings.push_root import layout as push_layout
  from tpu_embeddings.validation import baseline
  tokens = baseline.read_tokens(
      push_layout.version_dir(push_root, push_layout.SERVED, version))
  print(f'nearest neighbours (pushed version {version}):')
  for token in tokens[::max(1, len(tokens) // n)][:n]:
    # The `neighbors` signature leaves out the query token itself.
    _, found = consumer.neighbors(push_root, token, k=k, version=version,
                                  loaded=model)
    print(f'  {token:<16} ' + '  '.join(f'{t} {s:.2f}' for t, s in found))


# -- retrain: run the pipeline only when a newer span has landed.

def _register_retrain(sub):
  p = sub.add_parser('retrain', help='run the pipeline if the data root has a '
                     'span newer than the pushed model (exit 0 otherwise)')
  _add_pipeline_arguments(
      p, home_help='pipeline home of `run`: metadata.sqlite, pipeline/ and '
      'pushed/ (the pushed model\'s span is compared)')
  p.set_defaults(func=run_retrain)


def run_retrain(args) -> int:
  resolved = home_settings.resolve(args, 'retrain')
  config = resolved.config
  arguments.check_data_root(args.data, config.example_gen.pattern)
  # Before the decision, which reads the home's push root.
  store_guard.check_owner(args.home)
  push_root = home_lib.push_root(args.home)
  try:
    with retrain_lib.RetrainLock(args.home):
      decision = retrain_lib.decide(args.data, push_root,
                                    config.example_gen.pattern)
      print(f'retrain: {decision.reason}', flush=True)
      if not decision.run:
        return 0
      # TFX is imported only when there is something to run.
      local_runner = _runner()
      arguments.check_model(config, resolved.module_file)
      base = decision.warm_start_uri
      warm, warning = retrain_lib.choose_warm_start(
          decision, retrain_lib.planned_spec(config, resolved.module_file, base)
          if base else None, config.trainer.warm_start_from_pushed)
      if warning:
        print(f'warning: {warning}', flush=True)
      if not warm:
        config = retrain_lib.cold_start(config)
      summary = local_runner.run(args.data, args.home, config,
                                 warm_start_uri=warm,
                                 beam_pipeline_args=args.beam_arg or None,
                                 verbose=args.verbose,
                                 module_file=resolved.module_file)
      home_settings.record(args.home, resolved)
      summary['timing']['total_seconds'] = round(
          time.monotonic() - STARTED, 1)
      print(local_runner.format_summary(summary))
      return verdict_code(summary)
  except retrain_lib.LockHeld as e:
    print(f'retrain: {e}')
    return 0


# -- lineage: which model, examples and span a pushed version came from.

def _register_lineage(sub):
  p = sub.add_parser('lineage', help='pushed version -> model -> examples -> '
                     'span, from ML Metadata')
  p.add_argument('--home', required=True,
                 help='pipeline home of `run` (reads its metadata.sqlite)')
  p.add_argument('--version', type=int, help='pushed version (default latest)')
  p.add_argument('--json', action='store_true', help='print JSON')
  p.set_defaults(func=run_lineage)


def run_lineage(args) -> int:
  from pipelines.local import lineage
  result = lineage.lineage(args.home, args.version)
  print(json.dumps(result, indent=2) if args.json else
        lineage.format_lineage(result))
  return 0
