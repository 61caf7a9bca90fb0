"""The CPU adapter's skip-gram step as one custom op.

`CpuAdapter.step` looks the batch up with `TPUEmbeddingForServing`, takes the
loss and its gradients from the shared core, sums the gradients of duplicate
rows and applies the embedding optimizer's rule once per distinct row, each
in its own TensorFlow ops. The `SkipGramStep` op (tpu_embeddings/kernels)
does the same in one pass over the batch on the intra-op threads, on the same
variables (tables and optimizer slots, updated in place), so checkpoints keep
their keys and meaning.

The negatives feature is either [B, K] (K negatives per pair) or [N, S] with
N dividing B: each group of B/N consecutive pairs shares S negatives.
`negative_weight` multiplies the negatives' term (the adapter passes the
settings' K/S, so the loss keeps the scale of K negatives per pair).

    step = fused_step.for_adapter(spec, optimizer, variables, global_batch,
                                  negative_weight)
    loss = step(features) if step else <the TensorFlow path>
    losses = step.stacked(stacked_features, scales)  # S steps in one call

`stacked` runs S consecutive batches (features with a leading [S]) as S
steps of one op call, each at its own learning-rate scale: the same updates,
bit for bit, as S calls, without S hand-offs between the training loop's
ops (at 512 pairs x 64 dims those cost as much as the step).

A module declares this step with FUSED_STEP =
skipgram_features.SKIP_GRAM_STEP.
`for_adapter` returns None, with the reason logged once, when the op cannot
serve the spec: an optimizer other than SGD or Adagrad, or the op library
unavailable (see tpu_embeddings.kernels.library).
"""

from typing import Callable, Dict, Optional

import tensorflow as tf
from absl import logging

from tpu_embeddings.kernels import library
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE
from tpu_embeddings.models.skipgram_features import skipgram_tables
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import embedding_optimizers

# Optimizer class name -> the op's `optimizer` attribute.
SUPPORTED = {'SGD': 'sgd', 'Adagrad': 'adagrad'}
ACCUMULATORS = 'accumulators'

Variables = Dict[str, Dict[str, tf.Variable]]
Step = Callable[[Dict[str, tf.Tensor]], tf.Tensor]


def unsupported(spec: EmbeddingSpec, optimizer) -> Optional[str]:
  """Why the op cannot train `spec` with `optimizer`, or None if it can."""
  name = type(optimizer).__name__
  if name not in SUPPORTED:
    return f'optimizer {name} (the op has SGD and Adagrad)'
  embedding_optimizers.rule_for(optimizer)  # raises on unsupported options
  skipgram_tables(spec)
  return None


class FusedSkipGramStep:
  """`CpuAdapter.step` in one op: features -> the batch's mean loss."""

  def __init__(self, ops, spec: EmbeddingSpec, optimizer,
               variables: Variables, global_batch_size: int,
               negative_weight: float = 1.0):
    source, output = skipgram_tables(spec)
    # The rate at scale 1: the optimizer's rate is this times its scale.
    self._base_learning_rate = float(spec.optimizer.learning_rate)
    tables = [source] if source == output else [source, output]
    self._ops = ops
    self._optimizer = optimizer
    self._kind = SUPPORTED[type(optimizer).__name__]
    self._tables = [variables[t][embedding_optimizers.PARAMETERS]
                    for t in tables]
    self._slots = ([variables[t][ACCUMULATORS] for t in tables]
                   if self._kind == 'adagrad' else [])
    self._loss_scale = 1.0 / global_batch_size
    self._negative_weight = float(negative_weight)

  def _learning_rate(self) -> tf.Tensor:
    """The optimizer's learning rate now (a callable reads its scale)."""
    lr = self._optimizer.learning_rate
    return tf.cast(lr() if callable(lr) else lr, tf.float32)

  def _run(self, features: Dict[str, tf.Tensor], learning_rate: tf.Tensor
           ) -> tf.Tensor:
    return self._ops.skip_gram_step(
        tables=[v.handle for v in self._tables],
        slots=[v.handle for v in self._slots],
        target=tf.cast(features[TARGET_FEATURE], tf.int32),
        context=tf.cast(features[CONTEXT_FEATURE], tf.int32),
        negatives=tf.cast(features[NEGATIVES_FEATURE], tf.int32),
        learning_rate=learning_rate,
        loss_scale=tf.constant(self._loss_scale, tf.float32),
        negative_weight=tf.constant(self._negative_weight, tf.float32),
        optimizer=self._kind)

  @tf.autograph.experimental.do_not_convert
  def __call__(self, features: Dict[str, tf.Tensor]) -> tf.Tensor:
    return self._run(features, self._learning_rate())

  @tf.autograph.experimental.do_not_convert
  def stacked(self, features: Dict[str, tf.Tensor], scales: tf.Tensor
              ) -> tf.Tensor:
    """S steps: `features` [S, ...] (S batches stacked), the learning-rate
    scale of each step [S] -> each step's loss [S]. Step s's rate is the
    optimizer's base rate times scales[s], as the single step's is."""
    return self._run(features, tf.constant(self._base_learning_rate,
                                           tf.float32) *
                     tf.cast(scales, tf.float32))


def fallback_reason(spec: EmbeddingSpec, optimizer) -> str:
  """Why the op does not train `spec` with `optimizer` ('' if it does)."""
  return unsupported(spec, optimizer) or library.status().reason


def for_adapter(spec: EmbeddingSpec, optimizer, variables: Variables,
                global_batch_size: int, negative_weight: float = 1.0
                ) -> Optional[FusedSkipGramStep]:
  """The fused step for the CPU adapter's built variables, or None (the
  reason logged) when the adapter's TensorFlow step must train instead."""
  reason = unsupported(spec, optimizer)
  if reason is None:
    ops = library.load()
    if ops is None:
      return None  # load() said why
    return FusedSkipGramStep(ops, spec, optimizer, variables,
                             global_batch_size, negative_weight)
  logging.info('Skip-gram CPU step: TensorFlow path for %s', reason)
  return None
