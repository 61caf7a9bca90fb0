"""A verdict cached against one served version never pushes over another.

The repro of the issue, through `python -m pipelines run` on a tiny corpus:
a weak model is blessed with nothing served, but its push fails; a strong
model is pushed; then the weak run's command again. Its validator must
validate again, against the strong model now served, and refuse it.
"""

import os
import subprocess
import sys

from pipelines import demo_data
from tests.support import paths
from tests.support.tiny_pipeline import TINY
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import served

COMMON = ['--set', 'batch_size=256', '--set', 'dim=16',
          '--set', 'checkpoint_every=100', '--neighbors', '0',
          # Alone, a 3-step model is blessed (health and thresholds only):
          # the frequency-only model would refuse it before any baseline.
          '--set', 'beat_frequency_model=false']
WEAK = ['--set', 'train_steps=3']
STRONG = ['--set', 'train_steps=300']


def _run(data, home, settings):
  return subprocess.run(
      [sys.executable, '-m', 'pipelines', 'run', '--data', str(data),
       '--home', str(home)] + COMMON + settings,
      cwd=paths.REPO, capture_output=True, text=True, timeout=600)


def _line(out, prefix):
  found = [l for l in out.splitlines() if l.startswith(prefix)]
  assert found, f'no line starting with {prefix!r} in:\n{out}'
  return found[0][len(prefix):].strip()


def test_a_verdict_cached_without_a_baseline_is_redone_against_the_served(
    tmp_path):
  data, home = tmp_path / 'data', tmp_path / 'home'
  demo_data.generate(str(data), spans=1, seed=5, shape=TINY)
  root = str(home / 'pushed')
  # 1. The weak model is blessed, but its push fails (`serving` is a file
  #    here; a read-only push root fails the same way: the fault tables).
  os.makedirs(root)
  open(os.path.join(root, 'serving'), 'w').close()
  weak = _run(data, home, WEAK)
  assert weak.returncode == 2, weak.stderr[-2000:]
  assert weak.stderr.startswith('error: EmbeddingPusher failed: '), (
      weak.stderr)
  os.remove(os.path.join(root, 'serving'))
  # 2. The strong model is pushed as version 1.
  strong = _run(data, home, STRONG)
  assert strong.returncode == 0, strong.stderr[-2000:]
  assert _line(strong.stdout, 'pushed:') == 'version 1'
  strong_model = _line(strong.stdout, 'model:')
  # 3. The weak command again: its trainer and exports are reused, its
  #    verdict is not: validated against version 1, it is refused.
  again = _run(data, home, WEAK)
  assert again.returncode == 6, again.stderr[-2000:]
  cached = _line(again.stdout, 'cached (inputs unchanged):').split(', ')
  assert 'EmbeddingTrainer' in cached
  assert 'CheckpointValidator' not in cached
  verdict = _line(again.stdout, 'validation:')
  assert verdict.startswith('NOT BLESSED') and 'vs baseline' in verdict
  assert _line(again.stdout, 'pushed:') == 'nothing (model not blessed)'
  now = served.identity(root)
  assert now['version'] == 1 and push_layout.numbered(root, 'serving') == [1]
  manifest = push_layout.read_manifest(root, 'serving', 1)
  assert home_paths.resolve(manifest['source_model'], root) == strong_model
