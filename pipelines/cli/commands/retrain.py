"""`retrain`: run the pipeline only when a newer span has landed."""

import time

from tpu_embeddings.push_root import consumer
from pipelines.local import retrain as retrain_lib
from pipelines.cli.commands import run as run_command


def register(sub):
  p = sub.add_parser('retrain', help='run the pipeline if the data root has a '
                     'span newer than the pushed model (exit 0 otherwise)')
  p.add_argument('--data', required=True, help='data root with span-N/ folders')
  p.add_argument('--home', required=True,
                 help='pipeline home of `run`: metadata.sqlite, pipeline/ and '
                 'pushed/ (the pushed model\'s span is compared)')
  p.add_argument('--verbose', action='store_true', help='full TFX logs')
  run_command.add_config_arguments(p)
  p.set_defaults(func=run)


def run(args) -> int:
  config = run_command.config_from_args(args)
  run_command.check_data_root(args.data)
  push_root = consumer.push_root_for_home(args.home)
  try:
    with retrain_lib.RetrainLock(args.home):
      decision = retrain_lib.decide(args.data, push_root, config.example_gen.pattern)
      print(f'retrain: {decision.reason}', flush=True)
      if not decision.run:
        return 0
      # TFX is imported only when there is something to run.
      from pipelines.local import runner as local_runner  # pylint: disable=g-import-not-at-top
      summary = local_runner.run(args.data, args.home, config,
                                 warm_start_uri=decision.warm_start_uri,
                                 beam_pipeline_args=args.beam_arg or None,
                                 verbose=args.verbose)
      summary['timing']['total_seconds'] = round(
          time.monotonic() - run_command.STARTED, 1)
      print(local_runner.format_summary(summary))
      return 0
  except retrain_lib.LockHeld as e:
    print(f'retrain: {e}')
    return 0
