"""The two trainers a self-test compares, and the ways to perturb one.

With a TPU: the TPU adapter under TPUStrategy (the trainer of `run --tpu`)
against the CPU adapter as `run` trains on CPU. Without one, the CPU
adapter's two implementations against each other:

    skip-gram     the generic step (a tape through the lookups) against the
                  hand-derived step (the fused op where it loads and serves
                  the optimizer, else its TensorFlow ops; the name says);
    module file   the generic step against the activation-gradient step
                  (activation_step.py: gradients spread as on a TPU).

The reference (B) is always a CPU adapter. A model's dropout layers are
switched off on both sides: random masks drawn on two devices never match.
"""

import dataclasses
from typing import Any, Callable, Optional

import tensorflow as tf

from tpu_embeddings.kernels import library
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import cpu_adapter
from tpu_embeddings.training import fused_step
from tpu_embeddings.training import tpu_adapter
from tpu_embeddings.training.selftest import activation_step
from tpu_embeddings.training.selftest import options

# A perturbed step's learning rate is this much larger.
LEARNING_RATE_FACTOR = 1.05

# decay (a learning-rate scale per step) -> an adapter, not yet built.
MakeAdapter = Callable[[Callable[[Any], tf.Tensor]], Any]


@dataclasses.dataclass(frozen=True)
class Trainer:
  name: str
  make: MakeAdapter


@dataclasses.dataclass(frozen=True)
class Pair:
  """The candidate (A) and the reference (B); `note`: what differs between
  them by design."""
  candidate: Trainer
  reference: Trainer
  note: str = ''


class _WithoutDropout(ModelModule):
  """The module, its model's dropout layers at rate 0."""

  def build_model(self, ctx):
    model = super().build_model(ctx)
    for layer in model.submodules if model is not None else ():
      if isinstance(layer, tf.keras.layers.Dropout):
        layer.rate = 0.0
    return model


def deterministic(module: ModelModule) -> ModelModule:
  """`module` with every random draw of its training step removed."""
  if module.builtin:
    return module
  return _WithoutDropout(module._m, module.path, module.source)


def pair(module: ModelModule, spec: EmbeddingSpec, ctx,
         strategy: Optional[tf.distribute.TPUStrategy]) -> Pair:
  """What is compared on this machine (module docstring)."""
  if strategy is not None:
    replicas = strategy.num_replicas_in_sync
    tpu_ctx = dataclasses.replace(ctx, num_replicas=replicas)
    note = ''
    if replicas > 1 and not module.builtin:
      note = (f'the TPU computes loss_fn on each of its {replicas} replicas\' '
              'shares of a batch, the CPU on the whole batch: a loss over a '
              'batch\'s examples (in-batch negatives, batch normalization) '
              'differs by design; a 1-chip slice (v5e 1x1) compares the '
              'trainers alone')
    return Pair(
        Trainer(f'TPU adapter, TPUEmbedding on {replicas} replica(s)',
                lambda decay: tpu_adapter.TpuAdapter(
                    spec, module, tpu_ctx, strategy, decay)),
        Trainer('CPU adapter (as `run` trains on CPU)',
                lambda decay: cpu_adapter.CpuAdapter(
                    spec, module, ctx, decay)), note)
  reference = Trainer(
      'CPU adapter, generic step', lambda decay: cpu_adapter.CpuAdapter(
          spec, module, ctx, decay, fast_path=False))
  if module.activation_gradients is not None:
    return Pair(Trainer(
        f'CPU adapter, hand-derived step ({_fused_or_not(spec)})',
        lambda decay: cpu_adapter.CpuAdapter(spec, module, ctx, decay)),
                reference)
  return Pair(Trainer(
      'CPU adapter, activation-gradient step (as on a TPU)',
      lambda decay: activation_step.ActivationGradientAdapter(
          spec, module, ctx, decay)), reference)


def _fused_or_not(spec: EmbeddingSpec) -> str:
  """Which implementation the CPU adapter's fast step takes for `spec`."""
  reason = fused_step.unsupported(spec, spec.build_optimizer())
  if reason is None and library.load() is None:
    reason = 'the op library did not load'
  return f'TensorFlow ops: {reason}' if reason else 'the fused op'


def off_at(decay, step: int):
  """`decay` with step `step`'s learning rate LEARNING_RATE_FACTOR larger."""
  def perturbed(at):
    factor = tf.where(tf.equal(tf.cast(at, tf.int64), step),
                      LEARNING_RATE_FACTOR, 1.0)
    return decay(at) * factor
  return perturbed


def perturb_initial(adapter, perturbation: str) -> str:
  """Changes row 0 of the first table (ROW) or of its first slot (SLOT) of
  a built CPU adapter; what was changed."""
  table = adapter.spec.tables[0].name
  variables = adapter.variables[table]
  slots = sorted(n for n in variables if n != 'parameters')
  if perturbation == options.SLOT and not slots:
    raise ValueError(f'selftest --perturb slot: table {table!r} has no '
                     'optimizer slot (SGD); perturb row or learning-rate')
  name = 'parameters' if perturbation == options.ROW else slots[0]
  variable = variables[name]
  row = variable[0]
  variable[0].assign(row * 1.5 + 0.01)
  return f'{table}/{name} row 0'
