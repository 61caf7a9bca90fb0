"""What a fault table (fault_table.py) sees of the trainer's checkpoints.

A checkpoint counts as kept when every tensor of it reads back, which is
what a rerun continues from (tpu_embeddings/training/resume.py). Not by the
CheckpointManager's state file: a stop that lands after a checkpoint's files
are complete but before the state file names it leaves a checkpoint the
rerun rightly continues; a disk that fills while the files are written
leaves an index the rerun rightly skips.
"""

import glob
import json
import os
from typing import Dict, List

import tensorflow as tf

from tpu_embeddings.artifacts import model_layout


def past_step_0(models: str) -> List[str]:
  """Index files of checkpoints past step 0 (a warm start writes step 0) of
  the trainer outputs matching the glob `models`."""
  return [prefix + '.index' for model in glob.glob(models)
          for step, prefix in model_layout.saved_checkpoints(model)
          if step > 0]


def of_trainer(home: str) -> List[str]:
  return past_step_0(os.path.join(
      home, 'pipeline', 'EmbeddingTrainer', 'model', '*'))


def claimed_by(home: str, pid: int) -> List[str]:
  """Trainer checkpoints past step 0 in the outputs whose resume record
  names process `pid`: saved by its training, or adopted by it once the
  record is written (before that, a stop cannot name them)."""
  found = []
  for record in glob.glob(os.path.join(
      home, 'pipeline', 'EmbeddingTrainer', 'resume', '*.json')):
    try:
      with open(record) as f:
        pointer = json.load(f)
    except (OSError, ValueError):
      continue
    if isinstance(pointer, dict) and pointer.get('pid') == pid:
      found += past_step_0(str(pointer.get('model_uri')))
  return found


def _reads_back(prefix: str) -> bool:
  try:
    reader = tf.train.load_checkpoint(prefix)
    for name in reader.get_variable_to_shape_map():
      reader.get_tensor(name)
  except (tf.errors.OpError, ValueError, IndexError, RuntimeError):
    return False
  return True


def newest_readable(model: str) -> int:
  """The step of the newest checkpoint of trainer output (or kept folder)
  `model` whose every tensor reads back (0: none)."""
  return next((step for step, prefix in model_layout.saved_checkpoints(model)
               if _reads_back(prefix)), 0)


def trainer_view(home: str) -> Dict:
  """Trainer outputs' newest readable checkpoints, the step each finished
  one resumed from (None: not finished), and the kept folders' newest."""
  node = os.path.join(home, 'pipeline', 'EmbeddingTrainer')
  models = {}
  for model in glob.glob(os.path.join(node, 'model', '*')):
    metadata = os.path.join(model, 'metadata.json')
    done = None
    if os.path.exists(metadata):
      with open(metadata) as f:
        done = json.load(f)['resumed_from_step']
    models[os.path.basename(model)] = {
        'newest': newest_readable(model),
        'resumed_from_step': done}
  kept = {os.path.basename(k): newest_readable(k)
          for k in glob.glob(os.path.join(node, 'resume', '*.kept'))}
  return {'models': models, 'kept': kept}
