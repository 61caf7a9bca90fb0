"""Seconds the model contract check adds to `run`, `retrain` and `compile`.

    python -m benchmarks.contract_check_time [--rounds 3]
        [--module-file examples/two_tower/two_tower_model.py]

In one process, after importing what `run` imports anyway (the local
runner: TensorFlow, TFX), `pipelines.model_contract.check` of the built-in
skip-gram and of the module file, --rounds times each: the first round
(TensorFlow's one-time costs included) and the median of all. Targets
(issue 38): the module's check under 10 s; the built-in's at most ~1 s.
"""

import argparse
import importlib
import os
import statistics
import time

MODULE_FILE = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'examples', 'two_tower', 'two_tower_model.py')


def _timed(config, module_file: str, rounds: int):
  from pipelines import model_contract
  seconds = []
  for _ in range(rounds):
    started = time.monotonic()
    model_contract.check(config, module_file)
    seconds.append(time.monotonic() - started)
  return seconds


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument('--rounds', type=int, default=3)
  p.add_argument('--module-file', default=MODULE_FILE)
  args = p.parse_args(argv)
  started = time.monotonic()
  importlib.import_module('pipelines.local.runner')  # what `run` imports
  from pipelines.cli import arguments
  print(f'imports of run (not counted): {time.monotonic() - started:.1f} s')
  print(f'{"model":<24} {"first s":>8} {"median s":>9}')
  for label, module_file in (('built-in skip-gram', ''),
                             ('module file', args.module_file)):
    config = arguments.config_of({}, module_file)
    seconds = _timed(config, module_file, args.rounds)
    print(f'{label:<24} {seconds[0]:>8.2f} '
          f'{statistics.median(seconds):>9.2f}', flush=True)


if __name__ == '__main__':
  main()
