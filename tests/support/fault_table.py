"""Drives `python -m pipelines run` through a table of failures, in a chain.

A baseline run pushes version 1; then a new span lands and each row runs the
same command with one fault injected: a full file system at one component
(its folder is a small tmpfs, filled with a file) or under the home's ML
Metadata store while a component runs, a read-only home or push
root (a read-only remount), SIGINT at one component (to the process group,
as Ctrl-C does) or SIGTERM (to the process alone, as Kubernetes does). Each
row's run is also the rerun of the row before, so it shows that one
continuing; a last run without a fault must push version 2.

Mounts need a mount namespace: `unshare -rm python -m
tests.support.fault_table TABLE WORKDIR` runs a table and writes
WORKDIR/results.json for the test to assert on.
"""

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Set

from pipelines import demo_data
from tests.support import fault_checkpoints
from tests.support import paths
from tests.support import tiny_pipeline
from tpu_embeddings.push_root import status

NODES = ('FileBasedExampleGen', 'Vocabulary', 'EmbeddingTrainer',
         'CheckpointValidator', 'EmbeddingExporter', 'EmbeddingPusher')
SETTINGS = ['--set', 'train_steps=300', '--set', 'batch_size=256',
            '--set', 'dim=16', '--set', 'checkpoint_every=20',
            '--set', 'log_every=20', '--set', 'regression_margin=0.5',
            '--neighbors', '0']
TMPFS_BYTES = 64 << 20


@dataclasses.dataclass
class Row:
  name: str
  node: Optional[str]  # where the fault lands (None: before any)
  # disk_full, store_full, read_only_home, read_only_push, SIGINT, SIGTERM,
  # none
  fault: str
  when: str = 'start'          # start, running, checkpoint, writing


class Chain:
  """One home, one data root, the CLI run again and again."""

  def __init__(self, work: str, mounts: bool):
    self.work = work
    self.data = os.path.join(work, 'data')
    self.home = os.path.join(work, 'home')
    self.mounts = mounts
    self.fillers: List[str] = []

  # -- the file systems -------------------------------------------------------

  def mount(self):
    """tmpfs at the home, at each component's folder and at the push root."""
    os.makedirs(self.home)
    _sh('mount', '-t', 'tmpfs', '-o', f'size={TMPFS_BYTES}', 'tmpfs',
        self.home)
    for sub in [os.path.join('pipeline', n) for n in NODES] + ['pushed']:
      path = os.path.join(self.home, sub)
      os.makedirs(path)
      _sh('mount', '-t', 'tmpfs', '-o', f'size={TMPFS_BYTES}', 'tmpfs', path)

  def folder(self, node: str) -> str:
    sub = 'pushed' if node == 'EmbeddingPusher' else f'pipeline/{node}'
    return os.path.join(self.home, sub)

  def fill(self, node: str):
    """Leaves no free byte on the file system of `node`'s folder."""
    self.fill_folder(self.folder(node))

  def fill_folder(self, folder: str):
    """Leaves no free byte on the file system of `folder`."""
    path = os.path.join(folder, '.filler')
    stats = os.statvfs(folder)
    with open(path, 'wb', buffering=0) as f:
      with contextlib.suppress(OSError):
        os.posix_fallocate(f.fileno(), 0, stats.f_bavail * stats.f_frsize)
      with contextlib.suppress(OSError):
        while True:  # what fallocate left
          f.write(b'\0' * 4096)
    self.fillers.append(path)

  def remount(self, path: str, mode: str):
    _sh('mount', '-o', f'remount,{mode}', path)

  def clear(self):
    for path in self.fillers:
      os.remove(path)
    self.fillers = []

  # -- runs -------------------------------------------------------------------

  def command(self) -> List[str]:
    return [sys.executable, '-m', 'pipelines', 'run', '--data', self.data,
            '--home', self.home] + SETTINGS

  def run(self, row: Row) -> Dict:
    """Runs the CLI with `row`'s fault: what happened, what consumers see."""
    before = set(fault_checkpoints.of_trainer(self.home))
    process = subprocess.Popen(
        self.command(), cwd=paths.REPO, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: List[str] = []
    err: List[str] = []
    readers = [threading.Thread(target=_collect, args=(s, into), daemon=True)
               for s, into in ((process.stdout, lines), (process.stderr, err))]
    for reader in readers:
      reader.start()
    fired = self._inject(row, process, lines, before)
    process.wait(timeout=900)
    for reader in readers:
      reader.join()
    return {'row': dataclasses.asdict(row), 'fired': fired,
            'exit_code': process.returncode, 'stdout': ''.join(lines),
            'stderr': ''.join(err), 'push_root': self.push_root_view(),
            'trainer': self.trainer_view()}

  def trainer_view(self) -> Dict:
    return fault_checkpoints.trainer_view(self.home)

  def _inject(self, row: Row, process, lines, before) -> bool:
    """Waits for the row's moment and acts ('start' faults are in place)."""
    if row.when == 'start':
      return True
    trigger = _trigger(row, self.home, lines, before, process.pid)
    while process.poll() is None:
      if trigger():
        self._act(row, process)
        return True
      time.sleep(0.01)
    return False

  def _act(self, row: Row, process):
    if row.fault == 'SIGINT':
      os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does
    elif row.fault == 'SIGTERM':
      os.kill(process.pid, signal.SIGTERM)  # what Kubernetes does
    elif row.fault == 'disk_full':
      self.fill(row.node)
    elif row.fault == 'store_full':  # the home's tmpfs: metadata.sqlite
      self.fill_folder(self.home)

  def push_root_view(self) -> Dict:
    root = os.path.join(self.home, 'pushed')
    versions = status.scan(root)
    hidden = sorted(n for kind in ('serving', 'hub')
                    for n in os.listdir(os.path.join(root, kind))
                    if n.startswith('.')) if versions else []
    return {'states': {v.version: v.state for v in versions},
            'served': status.served_version(root), 'hidden': hidden}


def _collect(stream, into):
  for line in stream:
    into.append(line)


def _trigger(row: Row, home: str, lines: List[str], before,
             pid: int) -> Callable[[], bool]:
  running = f'  {row.node:<22} running ...\n'
  if row.when == 'running':
    return lambda: running in lines
  if row.when == 'checkpoint':  # a new one, of the training this run claimed
    return lambda: bool(set(fault_checkpoints.claimed_by(home, pid)) - before)
  # 'writing': once the component has written a file of this run, so the
  # stop lands amid its outputs however fast it is.
  folder = os.path.join(home, 'pipeline', row.node)
  earlier = _files(folder)
  return lambda: running in lines and bool(_files(folder) - earlier)


def _files(folder: str) -> Set[str]:
  return {os.path.join(d, f) for d, _, files in os.walk(folder)
          for f in files}


def _sh(*command: str):
  subprocess.run(command, check=True, capture_output=True)


DISK_ROWS = [
    Row('disk full at FileBasedExampleGen', 'FileBasedExampleGen',
        'disk_full'),
    Row('disk full at Vocabulary', 'Vocabulary', 'disk_full'),
    Row('disk full at EmbeddingTrainer', 'EmbeddingTrainer', 'disk_full',
        'checkpoint'),
    Row('disk full at CheckpointValidator', 'CheckpointValidator',
        'disk_full'),
    Row('disk full at EmbeddingExporter', 'EmbeddingExporter', 'disk_full'),
    Row('metadata store full at EmbeddingExporter', 'EmbeddingExporter',
        'store_full', 'running'),
    Row('disk full at EmbeddingPusher', 'EmbeddingPusher', 'disk_full'),
    Row('read-only push root', 'EmbeddingPusher', 'read_only_push'),
    Row('read-only home', None, 'read_only_home'),
]
SIGNAL_ROWS = [
    Row('SIGINT at FileBasedExampleGen', 'FileBasedExampleGen', 'SIGINT',
        'running'),
    Row('SIGINT at Vocabulary', 'Vocabulary', 'SIGINT', 'running'),
    Row('SIGINT at EmbeddingTrainer', 'EmbeddingTrainer', 'SIGINT',
        'checkpoint'),
    Row('SIGTERM at EmbeddingTrainer', 'EmbeddingTrainer', 'SIGTERM',
        'checkpoint'),
    Row('SIGINT at CheckpointValidator', 'CheckpointValidator', 'SIGINT',
        'running'),
    Row('SIGINT at EmbeddingExporter', 'EmbeddingExporter', 'SIGINT',
        'writing'),
    Row('SIGINT at EmbeddingPusher', 'EmbeddingPusher', 'SIGINT', 'running'),
]
TABLES = {'disk': DISK_ROWS, 'signals': SIGNAL_ROWS}


def run_table(name: str, work: str, only: Optional[List[str]] = None
              ) -> Dict:
  """The baseline, each row of table `name` (or those named in `only`), and
  the final clean run."""
  chain = Chain(work, mounts=name == 'disk')
  if chain.mounts:
    chain.mount()
  demo_data.generate(chain.data, spans=1, seed=11, shape=tiny_pipeline.TINY)
  clean = Row('clean run', None, 'none')
  results = {'baseline': chain.run(clean), 'rows': []}
  demo_data.generate(chain.data, spans=1, first_span=2, seed=12,
                     shape=tiny_pipeline.TINY)
  for row in TABLES[name]:
    if only and row.name not in only:
      continue
    if row.fault == 'disk_full' and row.when == 'start':
      chain.fill(row.node)
    elif row.fault == 'read_only_push':
      chain.remount(chain.folder('EmbeddingPusher'), 'ro')
    elif row.fault == 'read_only_home':
      chain.remount(chain.home, 'ro')
    results['rows'].append(chain.run(row))
    chain.clear()
    if row.fault == 'read_only_push':
      chain.remount(chain.folder('EmbeddingPusher'), 'rw')
    elif row.fault == 'read_only_home':
      chain.remount(chain.home, 'rw')
  results['final'] = chain.run(clean)
  return results


if __name__ == '__main__':
  table, workdir, *names = sys.argv[1:]
  results = run_table(table, workdir, names)
  with open(os.path.join(workdir, 'results.json'), 'w') as out:
    json.dump(results, out, indent=2)
