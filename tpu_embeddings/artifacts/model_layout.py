"""What the trainer's `Model` artifact holds and how to find it.

    <model uri>/embedding_spec.json   the resolved spec (vocabularies and
                                      their sizes set)
    <model uri>/vocabulary.tsv        skip-gram: table row i = line i
    <model uri>/vocabularies.json,    a module's named vocabularies
      vocabularies/<name>/            (tpu_embeddings.artifacts.vocabularies)
    <model uri>/user_module.py        the module file it was trained with,
                                      read by the validator and the exporter
                                      (sha256 in metadata.json)
    <model uri>/metadata.json         steps, examples seen, final loss, spans,
                                      device; written last
    <model uri>/checkpoint/           tf.train.CheckpointManager directory

The checkpoint is `tf.train.Checkpoint(embedding=<TPUEmbedding or
TPUEmbeddingForServing>, model=<the module's dense model>,
dense_optimizer=<its Keras optimizer>, step=<int64>, examples_seen=<int64>,
loss=<float32>)` (skip-gram has no model): the tables are
`embedding/<table>/.ATTRIBUTES/VARIABLE_VALUE`, their optimizer slots
`embedding/<table>.S<slot>/.ATTRIBUTES/VARIABLE_VALUE`, exactly as the TPU
writes them, the dense variables under `model/` and their optimizer's under
`dense_optimizer/`, side by side: the embedding is never inside the model.
"""

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from tpu_embeddings.core import file_system

CHECKPOINT_DIR = 'checkpoint'
METADATA_FILENAME = 'metadata.json'
# Key of metadata.json holding the trainer's settings (asdict(TrainerConfig)).
TRAINER_CONFIG_KEY = 'trainer_config'
EMBEDDING_KEY = 'embedding'
MODEL_KEY = 'model'
DENSE_OPTIMIZER_KEY = 'dense_optimizer'
USER_MODULE_FILENAME = 'user_module.py'
# Keys of metadata.json: the module file's SHA-256 ('' for skip-gram) and
# the kind ('bytes' or 'int64') of each Examples feature it looked up.
USER_MODULE_SHA256_KEY = 'user_module_sha256'
# ... and the module file's path as its user gave it (named in errors of the
# code in the copy, user_module.py).
USER_MODULE_FILE_KEY = 'user_module_file'
FEATURE_KINDS_KEY = 'feature_kinds'
# ... whether the module's model has a dense part beside its tables (the
# run summary says how it started: initialized, or as the warm start says).
DENSE_MODEL_KEY = 'dense_model'
# ... which ops trained the step: the kernels' fused op, TensorFlow's ops
# (why not the fused one under KERNELS_REASON_KEY) or the TPU's.
KERNELS_KEY = 'kernels'
KERNELS_REASON_KEY = 'kernels_reason'
FUSED_KERNELS = 'fused'
TENSORFLOW_KERNELS = 'tensorflow'
TPU_KERNELS = 'tpu'
_CHECKPOINT_INDEX = re.compile(r'^ckpt-(\d+)\.index$')


def table_key(table: str) -> str:
  return f'{EMBEDDING_KEY}/{table}/.ATTRIBUTES/VARIABLE_VALUE'


def slot_key(table: str, slot: str) -> str:
  return f'{EMBEDDING_KEY}/{table}.S{slot}/.ATTRIBUTES/VARIABLE_VALUE'


join = file_system.join


def checkpoint_dir(model_uri: str) -> str:
  return join(model_uri, CHECKPOINT_DIR)


def latest_checkpoint(model_uri: str) -> str:
  """Path prefix of the newest checkpoint in a Model artifact; clear error if
  none."""
  import tensorflow as tf
  directory = checkpoint_dir(model_uri)
  path = tf.train.latest_checkpoint(directory)
  if path is None:
    raise FileNotFoundError(
        f'model {model_uri}: no checkpoint in {directory} (expected a '
        'tf.train.CheckpointManager directory)')
  return path


def saved_checkpoints(model_uri: str) -> List[Tuple[int, str]]:
  """(step, path prefix) of every checkpoint in a Model, newest first: each
  `ckpt-N.index` found, whether or not its data reads back."""
  import tensorflow as tf
  directory = checkpoint_dir(model_uri)
  if not tf.io.gfile.isdir(directory):
    return []
  found = []
  for name in tf.io.gfile.listdir(directory):
    match = _CHECKPOINT_INDEX.match(name)
    if match:
      found.append((int(match.group(1)),
                    join(directory, name[:-len('.index')])))
  return sorted(found, reverse=True)


def write_metadata(model_uri: str, metadata: Dict[str, Any]):
  with file_system.open_file(join(model_uri, METADATA_FILENAME), 'w') as f:
    f.write(json.dumps(metadata, indent=2, sort_keys=True) + '\n')


def read_metadata(model_uri: str) -> Optional[Dict[str, Any]]:
  """The Model's metadata.json, or None; a local one is read without
  TensorFlow (`lineage` and the other commands that only read a home)."""
  path = join(model_uri, METADATA_FILENAME)
  if not file_system.exists(path):
    return None
  with file_system.open_file(path) as f:
    return json.load(f)
