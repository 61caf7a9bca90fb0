"""CPU adapter: `TPUEmbeddingForServing` lookups + the embedding optimizer's
rule, the dense model beside it.

The embedding object is built from the spec with the spec's optimizer, so the
mid-level API creates the slot variables itself (same names, same initial
values, same checkpoint keys as `TPUEmbedding`). Per step (`tape_step`):

1. look the batch's ids up with the serving API (ragged ids are combined per
   the table's combiner, dense ids keep their shape: [B] -> [B, D],
   [B, K] -> [B, K, D]), as TPUEmbedding's activations;
2. the module's loss on the activations, differentiated w.r.t. the table
   variables (IndexedSlices: the rows the batch read) and the model's;
3. per table: the rows' gradients, duplicate ids summed, then the embedding
   optimizer's own update rule on the parameters and their slots; the dense
   variables through the module's Keras optimizer.

A module without a dense model may give its loss's gradients w.r.t. the
activations itself (`activation_gradients`): `fast_step` then replaces step 2
with them, as the TPU adapter does. For a module declaring the skip-gram
fused step (FUSED_STEP) with SGD or Adagrad, `fast_step` is one op where it
loads (fused_step.py), on the same variables; the training loop then hands
the op stacks of batches, one call per stack (`train_stacked`,
stacked_steps.py).

The input is a factory of one input pipeline's batches; on CPU there is one
pipeline, whose batches are the global batches.
"""

import collections
from typing import Dict, List, Optional

import tensorflow as tf

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.core import input_pipelines
from tpu_embeddings.core.input_pipelines import InputFn
from tpu_embeddings.models import module_files
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.models.skipgram_features import SKIP_GRAM_STEP
from tpu_embeddings.spec import embedding_variables
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import dense_model
from tpu_embeddings.training import embedding_optimizers
from tpu_embeddings.training import fused_step
from tpu_embeddings.training import training_loop
from tpu_embeddings.training.learning_rate import LinearDecay

# Steps of the fused op per call (see fused_step.FusedSkipGramStep.stacked):
# small steps gain most from the first few per call, little past 16
# (docs/benchmarks.md).
MOST_STEPS_PER_CALL = 16


@tf.autograph.experimental.do_not_convert
def _ids_only(ids, extras):
  del extras  # the fused step reads the ids alone
  return ids


class CpuAdapter:
  """Trains a module's tables and dense model on CPU, writing TPU-format
  checkpoints."""

  device = 'cpu'

  def __init__(self, spec: EmbeddingSpec, module, ctx,
               decay: Optional[LinearDecay] = None, fast_path: bool = True,
               fused: bool = True):
    self.spec, self.module, self.ctx = spec, module, ctx
    self.global_batch_size = ctx.global_batch_size
    self.learning_rate_scale = tf.Variable(1.0, trainable=False)
    feature_config = spec.build_feature_config()
    self.embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
        feature_config, spec.build_optimizer(self.learning_rate_scale))
    # The mid-level API has attached the optimizer to every TableConfig.
    self._rules = {
        f.table.name: embedding_optimizers.rule_for(f.table.optimizer)
        for f in feature_config.values()
    }
    self._features_of_table: Dict[str, List[str]] = collections.defaultdict(
        list)
    for name, f in sorted(feature_config.items()):
      self._features_of_table[f.table.name].append(name)
    self.model = module.build_model(ctx)
    self.dense_optimizer = (module.build_dense_optimizer(ctx)
                            if self.model is not None else None)
    fast = (fast_path and self.model is None and
            module.activation_gradients is not None)
    fused_name = module.declared('FUSED_STEP')
    if fused_name and fused_name != SKIP_GRAM_STEP:
      raise ModelModuleError(
          f'module file {module.path}: FUSED_STEP {fused_name!r} names no '
          f'fused step; the one there is {SKIP_GRAM_STEP!r}')
    self.step = self.fast_step if fast else self.tape_step
    self._use_fused = fused
    self._fused = None  # set by build() when the fused op trains the spec
    # (which ops train the step, why not the fused op): set by build().
    self.kernels = (model_layout.TENSORFLOW_KERNELS, '')
    # train(iterator, steps, first_step) -> the steps' batch losses.
    self.train = training_loop.CompiledSteps(
        self.step, self.learning_rate_scale, decay or LinearDecay(0),
        user_code=module.declared('AUTOGRAPH', True))
    # train_stacked(iterator of stacks, steps, first_step): the same for
    # iterator(input_fn, stack > 1), where the fused op takes stacks.
    self.train_stacked = training_loop.CompiledSteps(
        self._fused_stack, self.learning_rate_scale, decay or LinearDecay(0),
        stacked=True)

  def build(self, element_spec=None):
    """Creates the tables and slots, and the dense model and its slots on a
    zero batch shaped as `element_spec` (the input's (ids, extras))."""
    self.embedding.build()
    self.kernels = self._build_fused()
    if self.model is not None:
      dense_model.build(self.module, self.ctx, self.spec, element_spec,
                        self.model, self.dense_optimizer)

  def _build_fused(self):
    """Builds the fused step where the module declares it and it can serve;
    (the kernels that train the step, why not the fused op)."""
    if self.module.declared('FUSED_STEP') != SKIP_GRAM_STEP:
      return model_layout.TENSORFLOW_KERNELS, 'the model has no fused step'
    if not self._use_fused or self.step != self.fast_step:
      return model_layout.TENSORFLOW_KERNELS, 'the fused step is turned off'
    optimizer = next(iter(self._rules.values())).optimizer
    self._fused = fused_step.for_adapter(
        self.spec, optimizer, self.variables, self.global_batch_size,
        negative_weight=self.module.hook('negative_weight')(self.ctx))
    if self._fused is None:
      return (model_layout.TENSORFLOW_KERNELS,
              fused_step.fallback_reason(self.spec, optimizer))
    return model_layout.FUSED_KERNELS, ''

  @property
  def most_steps_per_call(self) -> int:
    """Most steps `train_stacked` runs in one op call: MOST_STEPS_PER_CALL
    with the fused op (built), else 1 (a call per step)."""
    return MOST_STEPS_PER_CALL if self._fused is not None else 1

  def _fused_stack(self, ids, scales) -> tf.Tensor:
    return self._fused.stacked(ids, scales)

  @property
  def variables(self) -> Dict[str, Dict[str, tf.Variable]]:
    """{table: {'parameters': table, <slot>: slot variable}}."""
    return embedding_variables.table_variables(self.embedding)

  def iterator(self, input_fn: InputFn, stack: int = 1):
    """An iterator of `input_fn`'s batches for the one input pipeline; with
    `stack` > 1 (the fused op only), of their ids `stack` batches at a time
    (the last stack may hold fewer), for `train_stacked`."""
    batches = input_fn(input_pipelines.single())
    if stack > 1:
      batches = batches.map(_ids_only).batch(stack)
    return iter(batches)

  def tape_step(self, batch) -> tf.Tensor:
    """One step of any module: the loss differentiated by a tape."""
    ids, extras = batch
    tables = sorted(self._features_of_table)
    parameters = [self.variables[t][embedding_variables.PARAMETERS]
                  for t in tables]
    dense = list(self.model.trainable_variables) if self.model else []
    with tf.GradientTape() as tape:
      activations = self.embedding.embedding_lookup(ids)
      loss = self.module.loss(self.model, activations, extras, self.ctx, True)
    gradients = tape.gradient(loss, parameters + dense)
    for table, gradient in zip(tables, gradients):
      embedding_optimizers.apply_gradient(
          self._rules[table], self.variables[table], gradient,
          self.spec.table(table).dim)
    if dense:
      self.dense_optimizer.apply_gradients(
          [(g, v) for g, v in zip(gradients[len(tables):], dense)
           if g is not None])
    return loss

  def fast_step(self, batch) -> tf.Tensor:
    """One step with the gradients w.r.t. the activations derived by hand."""
    ids, _ = batch
    if self._fused is not None:
      return self._fused(ids)
    activations = self.embedding.embedding_lookup(ids)
    loss, gradients = self.module.activation_gradients(activations, self.ctx)
    for table, names in self._features_of_table.items():
      dim = self.spec.table(table).dim
      rows = tf.concat([tf.reshape(ids[n], [-1]) for n in names], 0)
      values = tf.concat([tf.reshape(gradients[n], [-1, dim]) for n in names],
                         0)
      embedding_optimizers.apply_sparse(self._rules[table],
                                        self.variables[table], rows, values)
    return loss


def for_skipgram(spec: EmbeddingSpec, global_batch_size: int,
                 decay: Optional[LinearDecay] = None,
                 fast_path: bool = True, fused: bool = True,
                 settings=None) -> CpuAdapter:
  """A CPU adapter of the built-in skip-gram on batches of (ids, {}).
  `fused=False` keeps the fast step in TensorFlow ops; `settings` (a
  SkipGramConfig) gives the loss its shared negatives' weight."""
  return CpuAdapter(spec, module_files.builtin(),
                    ModelContext(global_batch_size=global_batch_size,
                                 settings=settings), decay, fast_path, fused)
