"""A trainer's state written as a checkpoint and read back as the pipeline
reads it.

`save` writes what `run` writes (tables, slots, dense model and optimizer,
counters) through `checkpoints.create`; `read` restores the tables on CPU
with `TPUEmbeddingForServing` exactly as the validator and the exporter do
(`checkpoint_restore.restore_for_serving`, its shape checks included) and
takes the optimizer slots and the dense variables from the checkpoint under
their keys.
"""

from typing import Dict

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import checkpoints

# Checkpoint keys of the dense model and its optimizer start with these.
_DENSE = (model_layout.MODEL_KEY + '/', model_layout.DENSE_OPTIMIZER_KEY + '/')
_SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'


def _objects(adapter) -> Dict[str, object]:
  return checkpoints.objects(adapter.embedding, adapter.model,
                             adapter.dense_optimizer)


def write_initial(adapter, prefix: str) -> str:
  """The built adapter's variables, for another trainer to start from."""
  return tf.train.Checkpoint(**_objects(adapter)).write(prefix)


def start_from(adapter, path: str):
  """Sets every variable of the built adapter from `write_initial`'s
  checkpoint: the same tables, slots, dense weights and optimizer state."""
  tf.train.Checkpoint(**_objects(adapter)).read(
      path).assert_existing_objects_matched()


def save(adapter, spec: EmbeddingSpec, model_uri: str, steps: int) -> str:
  """The trainer's checkpoint after `steps` steps, in a Model layout."""
  tf.io.gfile.makedirs(model_uri)
  spec.save(model_uri)
  state = checkpoints.create(adapter.embedding, model_uri, adapter.model,
                             adapter.dense_optimizer)
  state.step.assign(steps)
  return state.manager.save(checkpoint_number=steps)


def read_raw(spec: EmbeddingSpec, path: str) -> Dict[str, np.ndarray]:
  """{table/parameters, table/slot, dense key: values} of a checkpoint,
  read under their keys."""
  reader = tf.train.load_checkpoint(path)
  values = {}
  for t in spec.tables:
    values[f'{t.name}/parameters'] = reader.get_tensor(
        model_layout.table_key(t.name))
    for slot in spec.optimizer.slot_names:
      values[f'{t.name}/{slot}'] = reader.get_tensor(
          model_layout.slot_key(t.name, slot))
  for key in sorted(reader.get_variable_to_shape_map()):
    if key.startswith(_DENSE) and key.endswith(_SUFFIX):
      values[key[:-len(_SUFFIX)]] = reader.get_tensor(key)
  return values


def read(spec: EmbeddingSpec, model_uri: str,
         path: str) -> Dict[str, np.ndarray]:
  """`read_raw`, the tables restored with `TPUEmbeddingForServing` as the
  validator restores them (its checks included)."""
  checkpoints.check_embedding_keys(spec, path)
  restored = checkpoint_restore.restore_for_serving(
      model_uri, path, read_vocabulary=False)
  values = read_raw(spec, path)
  for t in spec.tables:
    values[f'{t.name}/parameters'] = np.array(restored.table_numpy(t.name))
  return values
