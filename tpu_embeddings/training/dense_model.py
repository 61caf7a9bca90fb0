"""A module's dense model and its optimizer, built before the first step.

Keras creates a model's variables on its first call and an optimizer's slots
on its first update. The trainer creates both up front, so that restoring a
checkpoint (resume) or a base model (warm start) can check every dense
variable, and so that no variable is created inside the compiled step: the
model is called once through `loss_fn` on zero activations shaped as the
input's, and the optimizer is built on the model's trainable variables.
"""

from typing import Any, Dict, Tuple

import tensorflow as tf

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models.user_code import UserCodeError
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import checkpoints

# Rows of the zero batch the model is built on.
_BUILD_ROWS = 2


def _concrete(shape: tf.TensorShape, rows: int) -> list:
  """A shape with its batch dimension `rows` and any other unknown one 1."""
  dims = shape.as_list()
  return [rows] + [d if d is not None else 1 for d in dims[1:]]


def activation_shape(spec: EmbeddingSpec, feature: str,
                     ids_spec) -> tf.TensorShape:
  """The activation shape a feature's ids give, with TPUEmbedding's rules:
  ragged [B, None] -> [B, dim] (combined); dense [B, ...] -> [B, ..., dim]."""
  f = next(x for x in spec.features if x.name == feature)
  dim = spec.table(f.table).dim
  if isinstance(ids_spec, tf.RaggedTensorSpec):
    if f.max_sequence_length:
      return tf.TensorShape([ids_spec.shape[0], f.max_sequence_length, dim])
    return tf.TensorShape([ids_spec.shape[0], dim])
  return ids_spec.shape.concatenate([dim])


def zeros_batch(spec: EmbeddingSpec, element_spec) -> Tuple[Dict[str, Any],
                                                            Dict[str, Any]]:
  """(activations, extras) of zeros, shaped as the input's batches give."""
  ids_spec, extras_spec = element_spec
  activations = {
      name: tf.zeros(_concrete(activation_shape(spec, name, s), _BUILD_ROWS))
      for name, s in ids_spec.items()}
  extras = {name: tf.zeros(_concrete(s.shape, _BUILD_ROWS), s.dtype)
            for name, s in extras_spec.items()}
  return activations, extras


def build(module, ctx, spec: EmbeddingSpec, element_spec, model,
          optimizer) -> None:
  """Creates the variables of `model` and the slots of `optimizer`."""
  if model is None:
    return
  activations, extras = zeros_batch(spec, element_spec)
  try:
    module.loss(model, activations, extras, ctx, False)
  except UserCodeError as e:
    raise UserCodeError(e.path, f'{e.function} (on a zero batch, to create '
                        "the model's variables)", e.what) from e
  variables = model.trainable_variables
  if not variables:
    return
  if optimizer is None:
    module.build_dense_optimizer(ctx)  # raises: the model needs one
  if hasattr(optimizer, 'build') and callable(optimizer.build):
    optimizer.build(variables)
  else:  # a legacy Keras optimizer creates its slots this way
    optimizer._create_all_weights(variables)


def warm_start(module, ctx, spec: EmbeddingSpec, element_spec):
  """`dense` of `warm_start.write_initial_checkpoint`: a built model and
  optimizer, restored from the base when the base was trained with the same
  module file, else initialized."""
  def dense(base_uri: str, base_checkpoint: str):
    model = module.build_model(ctx)
    if model is None:
      return None, None, ''
    optimizer = module.build_dense_optimizer(ctx)
    build(module, ctx, spec, element_spec, model, optimizer)
    meta = model_layout.read_metadata(base_uri) or {}
    if meta.get(model_layout.USER_MODULE_SHA256_KEY) != module.sha256:
      return model, optimizer, ('initialized: the base was trained with '
                                'another module file')
    checkpoints.restore_dense(base_checkpoint, model, optimizer)
    return model, optimizer, 'restored from the base (same module file)'

  return dense
