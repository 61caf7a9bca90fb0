"""Kill the trainer with SIGKILL mid-run; rerun on the same output resumes."""

import collections
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

from tfx.types import standard_artifacts

from components import artifact_types
from components import model_layout
from components.embedding_spec import skipgram_spec
from components.trainer import executor
from pipelines import demo_data
from tests import artifact_fixtures as fx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_STEPS = 3000
CHECKPOINT_EVERY = 100

RUNNER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from tfx.types import standard_artifacts
    from components import artifact_types
    from components.trainer import executor
    root, props = sys.argv[2], json.loads(sys.argv[3])
    def artifact(cls, name):
      a = cls()
      a.uri = f'{root}/{name}'
      return a
    executor.Executor().Do(
        {'examples': [artifact(standard_artifacts.Examples, 'examples')],
         'vocabulary': [artifact(artifact_types.Vocabulary, 'vocabulary')]},
        {'model': [artifact(standard_artifacts.Model, 'model')],
         'model_run': [artifact(standard_artifacts.ModelRun, 'run')]},
        props)
""")


def checkpointed_step(model_uri):
  """Step of the newest checkpoint the manager has recorded, or None."""
  path = os.path.join(model_layout.checkpoint_dir(model_uri), 'checkpoint')
  try:
    with open(path) as f:
      match = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', f.read(),
                        re.M)
  except FileNotFoundError:
    return None
  return int(match.group(1)) if match else None


def test_sigkill_then_rerun_resumes_from_the_latest_checkpoint(tmp_path):
  root = str(tmp_path)
  lines = [l.split() for l in demo_data.span_lines(1)]
  fx.write_examples(f'{root}/examples', {'train': lines})
  fx.write_vocabulary(f'{root}/vocabulary',
                      collections.Counter(t for l in lines for t in l))
  props = {'config': json.dumps({
      'embedding_spec': skipgram_spec(dim=8, learning_rate=0.3).to_json(),
      'batch_size': 64, 'train_steps': TRAIN_STEPS, 'epochs': 0,
      'checkpoint_every': CHECKPOINT_EVERY, 'log_every': 50,
  })}
  process = subprocess.Popen(
      [sys.executable, '-c', RUNNER, REPO, root, json.dumps(props)],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  model = f'{root}/model'
  deadline = time.monotonic() + 120
  try:
    while checkpointed_step(model) is None:
      assert process.poll() is None, 'trainer exited before its 1st checkpoint'
      assert time.monotonic() < deadline, 'no checkpoint within 120 s'
      time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
  finally:
    process.wait()
  assert process.returncode == -signal.SIGKILL
  killed_at = checkpointed_step(model)
  assert CHECKPOINT_EVERY <= killed_at < TRAIN_STEPS
  assert killed_at % CHECKPOINT_EVERY == 0
  assert model_layout.read_metadata(model) is None  # the run is incomplete

  def artifact(cls, name):
    a = cls()
    a.uri = f'{root}/{name}'
    return a

  executor.Executor().Do(
      {'examples': [artifact(standard_artifacts.Examples, 'examples')],
       'vocabulary': [artifact(artifact_types.Vocabulary, 'vocabulary')]},
      {'model': [artifact(standard_artifacts.Model, 'model')],
       'model_run': [artifact(standard_artifacts.ModelRun, 'run')]}, props)
  meta = model_layout.read_metadata(model)
  assert meta['resumed_from_step'] == killed_at
  assert meta['steps'] == TRAIN_STEPS
  assert meta['steps_this_run'] == TRAIN_STEPS - killed_at
  assert meta['examples_seen'] == TRAIN_STEPS * 64
  assert checkpointed_step(model) == TRAIN_STEPS
