"""The TF1 Hub module of a module file's model: its tables and dense layers.

    <export_dir>/tfhub_module.pb
    <export_dir>/saved_model.pb          tag sets {} and {"train"}
    <export_dir>/variables/              the tables (named after them) and the
                                         dense variables the Hub call uses
    <export_dir>/assets/<vocabulary>.txt one token per line, line i = row i

Signature `default`: one [None] string input per HUB feature (a bag's tokens
separated by spaces), looked up as in training (unknown tokens removed, an
empty bag a zero activation, the table's combiner), then the model's HUB
call; output `default` (or the call's dict of outputs).

`module_fn` builds the model with the module's own `model_fn` in the graph
and calls it with `training=is_training`: the {"train"} tag set runs dropout
and batch normalization in training mode, makes the variables trainable and
puts the model's regularization losses into REGULARIZATION_LOSSES and its
batch-norm updates into UPDATE_OPS (Keras adds neither to TF1 collections;
`hub.Module(..., trainable=True, tags={"train"})` hands both to the
consumer), as the TF1 Hub publishing advice asks.

Every variable is initialized from the trainer's checkpoint by its object
key (`init_from_checkpoint`): tables from `embedding/<table>/...`, dense
variables from the key the same model code gives them in the checkpoint.
"""

from typing import Dict, Mapping

import tensorflow as tf
from tensorflow.python.checkpoint import graph_view
from tensorflow.python.checkpoint import util as checkpoint_util

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.models import context as context_lib
from tpu_embeddings.models import serving_model
from tpu_embeddings.models.model_restore import RestoredModule

TRAIN_TAGS = frozenset({'train'})
DEFAULT_SIGNATURE = 'default'
DEFAULT_OUTPUT = 'default'


def checkpoint_keys(model) -> Dict[str, str]:
  """{graph variable name: the trainer checkpoint's key} of a built model."""
  root = tf.train.Checkpoint(**{model_layout.MODEL_KEY: model})
  names = checkpoint_util.objects_ids_and_slot_variables_and_paths(
      graph_view.ObjectGraphView(root))[4]  # the view holds a weak reference
  # The Hub call may build part of the model (one tower): its variables.
  return {obj.op.name: f'{path}/.ATTRIBUTES/VARIABLE_VALUE'
          for obj, path in names.items() if isinstance(obj, tf.Variable)}


def _lookup(path: str, size: int):
  table = tf.compat.v1.lookup.StaticHashTable(
      tf.compat.v1.lookup.TextFileInitializer(
          path, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
          tf.lookup.TextFileIndex.LINE_NUMBER, vocab_size=size),
      default_value=-1)
  return table.lookup


def _tables(spec, is_training: bool) -> Dict[str, tf.Variable]:
  """The tables the Hub features read; reference variables, restored in
  place (no copy of a table)."""
  return {t.name: tf.compat.v1.get_variable(
      t.name, shape=[t.vocabulary_size, t.dim], dtype=tf.float32,
      initializer=tf.compat.v1.zeros_initializer(), trainable=is_training,
      use_resource=False) for t in spec.tables}


def _add_fine_tuning_collections(model):
  for loss in model.losses:
    tf.compat.v1.add_to_collection(
        tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES, loss)
  for update in model.updates:
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.UPDATE_OPS, update)


def make_module_spec(restored: RestoredModule,
                     vocabulary_files: Mapping[str, str], dense_keys: Dict):
  """The `hub.ModuleSpec`; fills `dense_keys` {variable name: checkpoint
  key} while `module_fn` runs."""
  import tensorflow_hub as hub
  module, ctx = restored.module, restored.ctx
  features = module.hub_features
  spec = restored.spec.only_tables(
      {f.table for f in restored.spec.features if f.name in features})

  def module_fn(is_training):
    tables = _tables(spec, is_training)
    lookups = {v: _lookup(vocabulary_files[v], ctx.vocabulary_size(v))
               for v in {ctx.features[f] for f in features}}
    inputs = {f: tf.compat.v1.placeholder(tf.string, [None], name=f)
              for f in features}
    ids = {f: context_lib.ids_of(raw_features.tokens(inputs[f]),
                                 lookups[ctx.features[f]]) for f in features}
    config = spec.build_feature_config()
    config = {f: config[f] for f in features}
    activations = tf.tpu.experimental.embedding.serving_embedding_lookup(
        ids, None, {c.table: tables[c.table.name] for c in config.values()},
        config)
    model = module.build_model(ctx)
    output = serving_model.call_model(model, module.hub_call, features,
                                      activations, is_training)
    if model is not None:
      dense_keys.update(checkpoint_keys(model))
      if is_training:
        _add_fine_tuning_collections(model)
    outputs = (dict(output) if isinstance(output, Mapping) else
               {DEFAULT_OUTPUT: output})
    hub.add_signature(DEFAULT_SIGNATURE, inputs, outputs)

  return hub.create_module_spec(
      module_fn, tags_and_args=[(set(), {'is_training': False}),
                                (set(TRAIN_TAGS), {'is_training': True})])


def export_hub_module(restored: RestoredModule,
                      vocabulary_files: Mapping[str, str], export_dir: str):
  """Writes the module of `restored` (its checkpoint's values) to
  `export_dir`, which must not exist."""
  import tensorflow_hub as hub
  if tf.io.gfile.exists(export_dir):
    raise FileExistsError(
        f'hub export: {export_dir} already exists; export into a new path')
  dense_keys: Dict[str, str] = {}
  spec = make_module_spec(restored, vocabulary_files, dense_keys)
  with tf.Graph().as_default():
    m = hub.Module(spec)
    assignment = {model_layout.table_key(name): variable
                  for name, variable in m.variable_map.items()
                  if name in {t.name for t in restored.spec.tables}}
    for name, key in dense_keys.items():
      if name not in m.variable_map:
        raise ValueError(f'hub export: the module has no variable {name!r}')
      assignment[key] = m.variable_map[name]
    tf.compat.v1.train.init_from_checkpoint(restored.checkpoint_path,
                                            assignment)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      m.export(export_dir, session)
