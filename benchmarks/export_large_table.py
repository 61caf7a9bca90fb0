"""Export of a large table to both formats: peak memory and wall time.

    python -m benchmarks.export_large_table [--rows 10000000] [--dim 64]
        [--optimizer adagrad] [--workdir DIR]

Writes a trainer Model artifact whose checkpoint is saved by `TPUEmbedding` in
CPU mode (TPU format; with the optimizer's slots, as the trainer writes it),
then runs the exporter (`components.exporter.executor.export_model`: restore,
serving SavedModel, Hub module, fresh-process load check, move into place) in a
new process and reports:

* peak RSS of the exporting process / table bytes          (target <= 1.5)
* export wall time / a plain copy of the checkpoint files  (target <= 3)

The baseline copy (`shutil.copytree` of the checkpoint directory) runs in the
same invocation right before the export, so both read the checkpoint from the
same page-cache state. The export's wall time includes the fresh-process load
checks (one new interpreter per export, each importing TensorFlow and loading
its export); the memory of those processes is not the exporting process's and
is not reported (a forked child's ru_maxrss starts at its parent's).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from benchmarks import synthetic_model

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _export(model_uri: str, out: str):
  import logging  # pylint: disable=g-import-not-at-top
  from absl import logging as absl_logging  # pylint: disable=g-import-not-at-top
  from components.exporter import executor  # pylint: disable=g-import-not-at-top
  phases = []

  class _Phases(logging.Handler):

    def emit(self, record):
      message = record.getMessage()
      if message.startswith('Export phase '):
        phases.append(message[len('Export phase '):])

  absl_logging.set_verbosity(absl_logging.INFO)
  absl_logging.get_absl_logger().addHandler(_Phases())
  with open('/proc/self/statm') as f:  # resident pages after the imports
    base_rss = int(f.read().split()[1]) * resource.getpagesize()
  start = time.perf_counter()
  executor.export_model(model_uri, os.path.join(out, 'serving'),
                        os.path.join(out, 'hub'))
  wall = time.perf_counter() - start
  print(json.dumps({
      'wall': wall,
      'base_rss': base_rss,
      'peak_rss': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
      'phases': phases,
  }))


def _run_child(*args) -> str:
  env = dict(os.environ, PYTHONPATH=_ROOT, TF_CPP_MIN_LOG_LEVEL='2')
  proc = subprocess.run([sys.executable, '-m', 'benchmarks.export_large_table',
                         *args], capture_output=True, text=True, env=env,
                        cwd=_ROOT, check=False)
  if proc.returncode != 0:
    sys.exit(f'benchmark child {args[:2]} failed:\n{proc.stderr[-3000:]}')
  return proc.stdout


def _dir_bytes(path: str) -> int:
  return sum(os.path.getsize(os.path.join(r, f))
             for r, _, files in os.walk(path) for f in files)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--rows', type=int, default=10_000_000)
  parser.add_argument('--dim', type=int, default=64)
  parser.add_argument('--optimizer', default='adagrad')
  parser.add_argument('--workdir', default='')
  parser.add_argument('--child', nargs='+', help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    if args.child[0] == 'write':
      synthetic_model.write_model(args.child[1], args.rows, args.dim,
                                  args.optimizer)
    else:
      _export(args.child[1], args.child[2])
    return

  work = args.workdir or tempfile.mkdtemp(prefix='export-bench-')
  try:
    model_uri = os.path.join(work, 'model')
    if os.path.exists(os.path.join(model_uri, 'metadata.json')):
      print(f'reusing the model in {model_uri}')  # from an earlier --workdir run
    else:
      start = time.perf_counter()
      _run_child('--rows', str(args.rows), '--dim', str(args.dim),
                 '--optimizer', args.optimizer, '--child', 'write', model_uri)
      print(f'wrote the model in {time.perf_counter() - start:.0f} s')
    ckpt_dir = os.path.join(model_uri, 'checkpoint')

    start = time.perf_counter()
    shutil.copytree(ckpt_dir, os.path.join(work, 'checkpoint-copy'))
    copy_wall = time.perf_counter() - start
    shutil.rmtree(os.path.join(work, 'checkpoint-copy'))

    out = os.path.join(work, 'exports')
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    result = json.loads(_run_child('--child', 'export', model_uri,
                                   out).strip().splitlines()[-1])
    table_bytes = args.rows * args.dim * 4
    rows = [
        ('peak RSS, exporting process', f'{result["peak_rss"] / 2**30:.2f} GiB',
         f'table {table_bytes / 2**30:.2f} GiB',
         result['peak_rss'] / table_bytes, '<= 1.5'),
        ('  same, above the imports (TF, TFX)',
         f'{(result["peak_rss"] - result["base_rss"]) / 2**30:.2f} GiB',
         f'table {table_bytes / 2**30:.2f} GiB',
         (result['peak_rss'] - result['base_rss']) / table_bytes, '(info)'),
        ('export wall time (incl. load check)', f'{result["wall"]:.1f} s',
         f'copy {copy_wall:.1f} s', result['wall'] / copy_wall, '<= 3'),
    ]
    print(f'\ntable {args.rows} x {args.dim} float32; checkpoint '
          f'({args.optimizer}, with slots) {_dir_bytes(ckpt_dir) / 2**30:.2f} '
          f'GiB; serving export {_dir_bytes(os.path.join(out, "serving")) / 2**30:.2f}'
          f' GiB; hub export {_dir_bytes(os.path.join(out, "hub")) / 2**30:.2f} GiB')
    print('export phases: ' + '; '.join(result['phases']))
    print(f'{"metric":38} {"value":>12} {"baseline":>18} {"ratio":>7} target')
    for name, value, base, ratio, target in rows:
      print(f'{name:38} {value:>12} {base:>18} {ratio:7.2f} {target}')
  finally:
    if not args.workdir:
      shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
  main()
