"""Two `run` commands into one --home at once: they take turns, each
validated against what the other pushed, and each reports its own run."""

import io
import json
import os
import re
import subprocess
import sys
import threading

from pipelines import demo_data
from pipelines.local import home_lock
from tests.support import paths
from tests.support.tiny_pipeline import TINY
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout

REPO = paths.REPO
COMMON = ['--set', 'batch_size=256', '--set', 'checkpoint_every=100',
          '--set', 'regression_margin=0.5', '--neighbors', '0']
# Settings that tell the two runs' models apart.
RUNS = {'a': {'dim': 16, 'train_steps': 150},
        'b': {'dim': 8, 'train_steps': 120}}


def _command(data, home, settings):
  args = [sys.executable, '-m', 'pipelines', 'run', '--data', str(data),
          '--home', str(home)] + COMMON
  for name, value in settings.items():
    args += ['--set', f'{name}={value}']
  return args


def _line(out, prefix):
  found = [l for l in out.splitlines() if l.startswith(prefix)]
  assert found, f'no line starting with {prefix!r} in:\n{out}'
  return found[0][len(prefix):].strip()


def _start_waiting(data, home):
  """Both runs started while the home's lock is held here, returned once
  both say they are waiting for it: {name: (process, its stdout lines, its
  stderr lines, the threads reading them)}. Only those threads read the
  pipes: nothing else may take a line from them."""
  procs = {}
  for name, settings in RUNS.items():
    proc = subprocess.Popen(
        _command(data, home, settings), cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    procs[name] = (proc, [], [], [])
  waiting = {name: threading.Event() for name in RUNS}

  def read(name):
    proc, lines, _, _ = procs[name]
    for line in proc.stdout:
      lines.append(line)
      if line.startswith('waiting for another run in this home'):
        waiting[name].set()
    waiting[name].set()  # ended without waiting: the asserts say so

  def read_errors(name):
    proc, _, errors, _ = procs[name]
    errors.extend(proc.stderr)

  for name in RUNS:
    for target in (read, read_errors):
      thread = threading.Thread(target=target, args=(name,), daemon=True)
      thread.start()
      procs[name][3].append(thread)
  for name in RUNS:
    waiting[name].wait(300)
  return procs


def test_concurrent_runs_take_turns_and_each_summarize_their_own_run(
    tmp_path):
  data, home = tmp_path / 'data', tmp_path / 'home'
  demo_data.generate(str(data), spans=1, seed=5, shape=TINY)
  os.makedirs(home)
  # Held here until both runs wait for it: they are concurrent for sure.
  with home_lock.HomeLock(str(home), io.StringIO()):
    procs = _start_waiting(data, home)
  outs = {}
  for name, (proc, lines, errors, readers) in procs.items():
    proc.wait(timeout=600)
    for thread in readers:
      thread.join(60)
    out, err = ''.join(lines), ''.join(errors)
    assert proc.returncode == 0, f'{out}\n{err[-3000:]}'
    assert out.splitlines()[1].startswith(
        'waiting for another run in this home to finish (pid '), out
    outs[name] = out

  push_root = str(home / 'pushed')
  versions, run_ids, against = set(), {}, {}
  for name, out in outs.items():
    settings = RUNS[name]
    model = _line(out, 'model:')
    with open(os.path.join(model, 'metadata.json')) as f:
      meta = json.load(f)
    # The model line names this run's model, not the other run's.
    assert meta['dim'] == settings['dim'], (name, out)
    assert meta['steps'] == settings['train_steps'], (name, out)
    assert _line(out, 'training:').startswith(
        f'{settings["train_steps"]} steps'), (name, out)
    # The blessing, metrics and push are this run's as well.
    # Blessed; within the margin it may be worse than the other's push.
    assert _line(out, 'validation:').startswith('BLESSED'), (name, out)
    report_path = _line(out, 'report:')
    with open(os.path.join(os.path.dirname(report_path), 'report.json')) as f:
      report = json.load(f)
    assert report['current_model'] == model, (name, out)
    version = int(re.fullmatch(r'version (\d+)', _line(out, 'pushed:'))[1])
    manifest = push_layout.read_manifest(push_root, 'serving', version)
    assert home_paths.resolve(manifest['source_model'], push_root) == model
    versions.add(version)
    run_ids[name] = manifest['pipeline_run_id']
    against[version] = (report['validated_against'],
                        report['baseline_version'])
  assert versions == {1, 2}
  assert len(set(run_ids.values())) == 2
  for name, out in outs.items():
    assert _line(out, 'metadata:').endswith(f'(run {run_ids[name]})')
  # One after the other: the second validated against the first's push.
  assert against[1] == (None, None)
  assert against[2][0]['version'] == 1 and against[2][1] == 1
