"""Every quality-at-scale target, measured side by side in one run.

Each part runs the benchmark that measures it and keeps the figure its
target is stated on (docs/benchmarks.md, "The targets in one run"):

* texts (`--text NAME=PATH`, the 10M+-token one among them; gensim's Lee,
  head500 and Wikipedia samples with `--small`): `real_corpora`, no
  settings, `--seeds` runs; each similarity set and the analogies against
  gensim's median (at least gensim's, within 0.005), blessed, and the
  whole pipeline's seconds against gensim's build + train (at most 0.7x,
  for texts of 10M+ tokens);
* interaction logs (`--events NAME=PATH`): `session_quality` with the item
  config; next-item HR@10 against gensim's (within 0.005) and the trainer's
  seconds against gensim's training (at most 0.7x);
* the large export (`--export-rows`, 0 skips it): `export_large_table`;
  wall against the two peers' (at most 0.5x) and peak RSS against the table
  (at most 1.2x);
* the demo (`--demo-runs`, 0 skips it): the CLI's `demo-data` and `run` as
  `make run` calls them, median end-to-end seconds (under 8 s);
* the suite (`--suite`): `make unit` and `make test` once each in this
  checkout (under 90 s and 6 minutes).

The last table gives each target, its figure, the goal and whether it is
met, under the date, the machine and the commit it was measured at.
"""

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List, NamedTuple, Optional

import numpy as np

from benchmarks import export_large_table
from benchmarks import kernels_ready
from benchmarks import real_corpora
from benchmarks import run_arguments
from benchmarks import session_quality

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Within this much of gensim's figure counts as at least gensim's.
QUALITY_TOLERANCE = 0.005
TIME_RATIO = 0.7
LARGE_TEXT_TOKENS = 10_000_000


class Target(NamedTuple):
  """One measured target: what, the figure as printed, the goal, met
  (None: a figure given for information, with no goal)."""
  what: str
  figure: str
  goal: str
  met: Optional[bool]


def _quality(name: str, figures: dict, gensim: dict) -> List[Target]:
  """Each figure against gensim's; one neither side could compute (too
  few items both know) is not met."""
  found = []
  for key, ours in figures.items():
    theirs = gensim.get(key)
    measured = ours is not None and theirs is not None
    found.append(Target(
        f'{name}: {key} - gensim',
        f'{ours - theirs:+.3f} ({ours:.3f})' if measured else
        'not measured (too few items)', f'>= -{QUALITY_TOLERANCE}',
        measured and ours - theirs >= -QUALITY_TOLERANCE))
  return found


def texts(names: List[str], texts_given: dict, seeds: int, similarity: str,
          work: str) -> List[Target]:
  """The pipeline and gensim on each text: quality, blessing and, on texts
  of 10M+ tokens, the whole run's time against gensim's."""
  argv = ['--corpora', ','.join(n for n in names if n not in texts_given),
          '--seeds', str(seeds), '--work', work]
  argv += [f'--text={n}={p}' for n, p in texts_given.items()]
  if similarity:
    argv += ['--similarity', similarity]
  args = real_corpora.parse_args(argv)
  found = []
  for name in args.names:
    rows = real_corpora.run_text(name, work, args)
    ours, theirs = rows['pipeline'], rows['gensim']
    found += _quality(name, ours['figures'], theirs['figures'])
    found.append(Target(f'{name}: blessed', ours['blessed'], 'yes',
                        ours['blessed'] == 'yes'))
    tokens = rows['tokens']
    ratio = ours['whole'] / theirs['whole']
    timed = tokens >= LARGE_TEXT_TOKENS
    found.append(Target(
        f'{name}: whole pipeline / gensim build + train',
        f'{ratio:.2f}x ({ours["whole"]:.1f} s / {theirs["whole"]:.1f} s)',
        f'<= {TIME_RATIO}x' if timed else '- (under 10M tokens)',
        ratio <= TIME_RATIO if timed else None))
  return found


def events(given: List[str], seeds: int, work: str) -> List[Target]:
  """The item config on each interaction log: HR@10 and trainer time
  against gensim's (2 workers, the pipeline's train split)."""
  args, sequences = session_quality.parse_args(
      [f'--events={e}' for e in given] + ['--seeds', str(seeds)])
  found = []
  for name, found_sequences in sequences.items():
    rows = session_quality.run_events(name, found_sequences, work, args)
    ours, theirs = rows[0], rows[1]
    found += _quality(name, {'HR@10 next': ours['figures']['next']},
                      {'HR@10 next': theirs['figures']['next']})
    ratio = ours['train'] / theirs['train']
    found.append(Target(
        f'{name}: trainer / gensim training',
        f'{ratio:.2f}x ({ours["train"]:.1f} s / {theirs["train"]:.1f} s)',
        f'<= {TIME_RATIO}x', ratio <= TIME_RATIO))
  return found


def large_export(rows: int, dim: int, rounds: int,
                 work: str) -> List[Target]:
  """export_large_table's ratios, its model and exports under `work` (a
  10M-row run writes about 15 GiB)."""
  ratios = export_large_table.run(['--rows', str(rows), '--dim', str(dim),
                                   '--rounds', str(rounds), '--workdir',
                                   os.path.join(work, 'export')])
  what = f'export {rows:,} x {dim}'
  return [
      Target(f'{what}: wall / peers', f'{ratios["wall_vs_peers"]:.2f}x',
             f'<= {export_large_table.WALL_TARGET}x',
             ratios['wall_vs_peers'] <= export_large_table.WALL_TARGET),
      Target(f'{what}: peak RSS / table',
             f'{ratios["rss_vs_table"]:.2f}x (above the imports '
             f'{ratios["rss_above_imports_vs_table"]:.2f}x)',
             f'<= {export_large_table.RSS_TARGET}x',
             ratios['rss_vs_table'] <= export_large_table.RSS_TARGET)]


def _cli(*args: str, env=None) -> float:
  """Seconds `python -m pipelines <args>` took; it must succeed."""
  start = time.perf_counter()
  subprocess.run([sys.executable, '-m', 'pipelines', *args], cwd=_ROOT,
                 env=env, check=True, stdout=subprocess.DEVNULL)
  return time.perf_counter() - start


def demo(runs: int, work: str) -> List[Target]:
  """`make run`'s two commands, a fresh home each run (the data once, as
  `make run` writes it once), in a new folder of `work` so that a second
  targets run there times fresh runs too; median seconds of the run."""
  folder = tempfile.mkdtemp(prefix='demo-', dir=work)
  data = os.path.join(folder, 'data')
  _cli('demo-data', '--out', data, '--spans', '2')
  env = dict(os.environ, GLIBC_TUNABLES='glibc.malloc.hugetlb=1')
  seconds = [_cli('run', '--data', data, '--home',
                  os.path.join(folder, f'home-{i}'), env=env)
             for i in range(runs)]
  median = statistics.median(seconds)
  return [Target('demo: `make run` end to end',
                 f'{median:.1f} s (median of {runs})', '< 8 s', median < 8)]


def suite() -> List[Target]:
  found = []
  for target, limit in (('unit', 90), ('test', 360)):
    start = time.perf_counter()
    done = subprocess.run(['make', target], cwd=_ROOT, check=False,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    passed = done.returncode == 0
    found.append(Target(f'suite: `make {target}`',
                        f'{seconds:.0f} s{"" if passed else " (FAILED)"}',
                        f'< {limit} s', passed and seconds < limit))
  return found


def _commit() -> str:
  def git(*args):
    return subprocess.run(['git', *args], cwd=_ROOT, capture_output=True,
                          text=True, check=False).stdout.strip()
  return (git('rev-parse', '--short', 'HEAD') or 'unknown') + (
      ' with changes' if git('status', '--porcelain', '--untracked-files=no')
      else '')


def _machine() -> str:
  model, memory = '', ''
  try:
    with open('/proc/cpuinfo') as f:
      model = next((line.split(':', 1)[1].strip() for line in f
                    if line.startswith('model name')), '')
    with open('/proc/meminfo') as f:
      memory = f'{int(f.readline().split()[1]) / 2**20:.0f} GiB'
  except OSError:
    pass
  return f'{os.cpu_count()} cores {model}, {memory}'.strip(', ')


def print_targets(found: List[Target]):
  now = datetime.datetime.now(datetime.timezone.utc)
  print(f'\n== targets: {now:%Y-%m-%d %H:%M} UTC, commit {_commit()}, '
        f'{_machine()}')
  width = max(len(t.what) for t in found)
  figure = max(len(t.figure) for t in found)
  print(f'{"target":<{width}}  {"figure":<{figure}}  {"goal":<20} met')
  for t in found:
    met = '-' if t.met is None else 'yes' if t.met else 'NO'
    print(f'{t.what:<{width}}  {t.figure:<{figure}}  {t.goal:<20} {met}')
  goals = [t for t in found if t.met is not None]
  print(f'{sum(t.met for t in goals)} of {len(goals)} targets met')


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--text', action='append', default=[],
                      metavar='NAME=PATH', help='a tokenized text; repeatable')
  parser.add_argument('--small', default='lee,head500,enwiki',
                      help="gensim's small texts to run too ('' for none)")
  parser.add_argument('--similarity', default='', metavar='DIR',
                      help='similarity sets beside WordSim-353 (SimLex-999, '
                      'MEN, ...), as real_corpora reads them')
  parser.add_argument('--seeds', type=int, default=3)
  parser.add_argument('--events', action='append', default=[],
                      metavar='NAME=PATH', help='an interaction log; '
                      'repeatable')
  parser.add_argument('--export-rows', type=int, default=10_000_000)
  parser.add_argument('--export-dim', type=int, default=64)
  parser.add_argument('--export-rounds', type=int, default=3)
  parser.add_argument('--demo-runs', type=int, default=3)
  parser.add_argument('--suite', action='store_true',
                      help='time `make unit` and `make test` too')
  parser.add_argument('--work', help='keep corpora and homes here')
  args = parser.parse_args(argv)
  try:
    given = run_arguments.named_files(args.text, '--text')
  except ValueError as e:
    parser.error(str(e))
  names = [n for n in args.small.split(',') if n] + list(given)
  if not (names or args.events or args.export_rows or args.demo_runs or
          args.suite):
    parser.error('nothing to measure: give --text, --small, --events, '
                 '--export-rows, --demo-runs or --suite')
  found: List[Target] = []
  kernels_ready.build_first()
  try:
    with tempfile.TemporaryDirectory() as tmp:
      _measure(args, names, given, args.work or tmp, found)
  finally:  # what was measured before a part failed is printed too
    if found:
      print_targets(found)


def _measure(args, names: List[str], given: dict, work: str,
             found: List[Target]):
  """Runs every part `args` asks for, adding its targets to `found`."""
  if names:
    found += texts(names, given, args.seeds, args.similarity, work)
  if args.events:
    found += events(args.events, args.seeds, work)
  if args.export_rows:
    found += large_export(args.export_rows, args.export_dim,
                          args.export_rounds, work)
  if args.demo_runs:
    found += demo(args.demo_runs, work)
  if args.suite:
    found += suite()

if __name__ == '__main__':
  np.seterr(all='ignore')
  main()
