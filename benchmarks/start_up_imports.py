"""Seconds a process spends importing what it needs, with Python's garbage
collector on (the baseline: how Python starts) and paused (`import_gc`).

    python -m benchmarks.start_up_imports [--rounds 5]
        [--modules pipelines.local.runner,tpu_embeddings.exports.load_check]

Each round imports each module in two new interpreters, one per way, in
turn; the table gives each way's median wall and CPU seconds and the
paused/on ratio. The default modules are what `pipelines run` imports
before its first component (TensorFlow, TFX, Beam) and what the export's
load-check process imports (TensorFlow).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = '''
import importlib, json, sys, time
from tpu_embeddings.core import import_gc
module, paused = sys.argv[1], sys.argv[2] == 'paused'
wall, cpu = time.perf_counter(), time.process_time()
if paused:
  with import_gc.paused():
    importlib.import_module(module)
else:
  importlib.import_module(module)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
'''

WAYS = ('on', 'paused')


def timed_import(module: str, way: str):
  """(wall, CPU) seconds of importing `module` in a new interpreter."""
  env = dict(os.environ, PYTHONPATH=_REPO, TF_CPP_MIN_LOG_LEVEL='2')
  done = subprocess.run([sys.executable, '-c', _CHILD, module, way],
                        env=env, capture_output=True, text=True, check=False)
  if done.returncode != 0:
    raise SystemExit(f'start_up_imports: importing {module} failed:\n'
                     f'{done.stderr[-2000:]}')
  return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument('--rounds', type=int, default=5)
  p.add_argument('--modules',
                 default='pipelines.local.runner,'
                         'tpu_embeddings.exports.load_check')
  args = p.parse_args(argv)
  if args.rounds < 1:
    raise SystemExit(f'--rounds must be >= 1, got {args.rounds}')
  for module in args.modules.split(','):
    seconds = {way: [] for way in WAYS}
    for _ in range(args.rounds):
      for way in WAYS:
        seconds[way].append(timed_import(module, way))
    medians = {way: [statistics.median(s[i] for s in seconds[way])
                     for i in (0, 1)] for way in WAYS}
    print(f'import {module} (medians of {args.rounds})')
    print(f'  {"":<18} {"wall s":>7} {"cpu s":>7}')
    for way in WAYS:
      wall, cpu = medians[way]
      print(f'  {"collector " + way:<18} {wall:>7.2f} {cpu:>7.2f}')
    print(f'  {"paused / on":<18} '
          f'{medians["paused"][0] / medians["on"][0]:>7.2f} '
          f'{medians["paused"][1] / medians["on"][1]:>7.2f}', flush=True)


if __name__ == '__main__':
  main()
