"""A trainer run in a child process and SIGKILLed mid-run, for the resume tests.

`run_in_process` is also what the child runs (`RUNNER`), so the killed and the
rerun trainer are the same code.
"""

import collections
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time

from tfx.types import standard_artifacts

from components import artifact_types
from components import keys
from components.trainer import executor
from pipelines import demo_data
from tests.support import artifact_fixtures as fx
from tests.support import paths
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models.skipgram_features import skipgram_spec

REPO = paths.REPO
TRAIN_STEPS = 3000
CHECKPOINT_EVERY = 100

# Trains in a child process, to be killed: run_in_process(root, props, model).
RUNNER = ('import json, sys; sys.path.insert(0, sys.argv[1]); '
          'from tests.support import killed_trainer as t; '
          't.run_in_process(sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])')


def start_trainer(root, props, model):
  return subprocess.Popen(
      [sys.executable, '-c', RUNNER, REPO, root, json.dumps(props), model],
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_when(process, reached, what):
  """SIGKILLs `process` once `reached()` is true."""
  deadline = time.monotonic() + 240
  try:
    while not reached():
      assert process.poll() is None, f'trainer exited before {what}'
      assert time.monotonic() < deadline, f'no {what} within 240 s'
      time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
  finally:
    process.wait()
  assert process.returncode == -signal.SIGKILL


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


def write_inputs(root, span=1):
  lines = [l.split() for l in demo_data.span_lines(span)]
  fx.write_examples(f'{root}/examples', {'train': lines})
  fx.write_vocabulary(f'{root}/vocabulary',
                      collections.Counter(t for l in lines for t in l))


def trainer_props(root, resume_root=None, **changes):
  values = {
      'embedding_spec': skipgram_spec(dim=8, learning_rate=0.3).to_json(),
      'batch_size': 64, 'train_steps': TRAIN_STEPS, 'epochs': 0,
      'checkpoint_every': CHECKPOINT_EVERY, 'log_every': 50,
  }
  values.update(changes)
  return {'config': json.dumps(values), keys.RESUME_ROOT:
          f'{root}/resume' if resume_root is None else resume_root}


def run_in_process(root, props, model, examples='examples'):
  def artifact(cls, name):
    a = cls()
    a.uri = f'{root}/{name}'
    return a
  executor.Executor().Do(
      {'examples': [artifact(standard_artifacts.Examples, examples)],
       'vocabulary': [artifact(artifact_types.Vocabulary, 'vocabulary')]},
      {'model': [artifact(standard_artifacts.Model, model)],
       'model_run': [artifact(standard_artifacts.ModelRun, model + '-run')]},
      props)
  return model_layout.read_metadata(f'{root}/{model}')


@dataclasses.dataclass
class Killed:
  root: str
  props: dict
  step: int      # newest checkpoint the manager recorded before the kill
  pointers: dict  # resume root file name -> text, as the kill left them

  def restore_pointers(self):
    for name, text in self.pointers.items():
      with open(f'{self.root}/resume/{name}', 'w') as f:
        f.write(text)


def kill_after_3rd_checkpoint(root):
  """Starts a trainer in `root`, SIGKILLs it after its 3rd checkpoint.

  Returns:
    Killed, with the resume root's pointer as the kill left it.
  """
  write_inputs(root)
  props = trainer_props(root)
  kill_when(start_trainer(root, props, 'model'),
            lambda: (checkpointed_step(f'{root}/model') or 0) >= (
                3 * CHECKPOINT_EVERY), 'a 3rd checkpoint')
  step = checkpointed_step(f'{root}/model')
  assert step < TRAIN_STEPS
  pointers = {}
  for name in os.listdir(f'{root}/resume'):
    with open(f'{root}/resume/{name}') as f:
      pointers[name] = f.read()
  assert len(pointers) == 1, pointers
  assert json.loads(next(iter(pointers.values())))['model_uri'] == (
      f'{root}/model')
  return Killed(root, props, step, pointers)
