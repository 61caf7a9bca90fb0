"""The self-test: two trainers, the same start, the same batches, compared.

    result = runner.run(module, trainer_config, tpu='auto', steps=50,
                        workdir=tmp)
    print('\\n'.join(result.lines)); exit(0 if result.agrees else 1)

1. The device, as `run --tpu` resolves and connects it (`device.choose`,
   `device.connect`): a TPU reachable -> the TPU adapter against the CPU
   adapter; none -> the CPU adapter's two steps (trainers.py), said plainly.
2. A synthetic model input fixed by the seed (synthetic.py): vocabularies,
   the resolved spec and `steps` batches.
3. The reference is built and its initial state written; the candidate is
   built and restored from it: the same tables, optimizer slots, dense
   weights and optimizer state on both sides.
4. They train `steps` steps in lockstep on the same batches, with the same
   learning-rate schedule, each step from the reference's state; after
   each, every table, slot and dense variable and the loss are compared
   (lockstep.py, compare.py). The last step's checkpoints are written as
   `run` writes them and read back as the validator reads them.
"""

import contextlib
import dataclasses
import os
from typing import List

import tensorflow as tf

from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.training import device
from tpu_embeddings.training import learning_rate
from tpu_embeddings.training.learning_rate import LinearDecay
from tpu_embeddings.training.selftest import checkpoint_values
from tpu_embeddings.training.selftest import compare
from tpu_embeddings.training.selftest import lockstep
from tpu_embeddings.training.selftest import options
from tpu_embeddings.training.selftest import synthetic
from tpu_embeddings.training.selftest import trainers

# A run this long warms its learning rate up over the longest warm-up.
PLANNED_STEPS = int(learning_rate.MAX_WARMUP_STEPS /
                    learning_rate.WARMUP_FRACTION)


@dataclasses.dataclass(frozen=True)
class Result:
  agrees: bool
  verdict: compare.Verdict
  lines: List[str]


def connect(tpu: str):
  """(TPUStrategy or None, the line saying which). A TPU that is named but
  unreachable raises device.connect's one-line RuntimeError."""
  choice = device.choose(tpu)
  if choice.kind == 'cpu':
    return None, (
        f'no TPU reachable ({choice.reason}): comparing the CPU adapter\'s '
        'two implementations instead (run with --tpu auto on a TPU VM, or '
        '--tpu NAME, to compare the TPU with the CPU)')
  strategy = device.connect(choice)
  return strategy, (f'TPU: {choice.description}, '
                    f'{strategy.num_replicas_in_sync} replica(s)')


def planned_steps(settings, steps: int) -> int:
  """The run whose first `steps` steps the self-test trains, for the
  learning-rate schedule: `train_steps`, else one whose warm-up is the
  longest a run has (MAX_WARMUP_STEPS); 0 without decay."""
  if not settings.learning_rate_decay:
    return 0
  return max(steps, settings.train_steps or PLANNED_STEPS)


def _check(steps: int, perturb: str):
  if not 1 <= steps <= options.MAX_STEPS:
    raise ValueError(f'selftest --steps must be in 1..{options.MAX_STEPS}, got '
                     f'{steps}')
  if perturb and perturb not in options.PERTURBATIONS:
    raise ValueError(f'selftest --perturb {perturb!r}: one of '
                     f'{", ".join(options.PERTURBATIONS)}')


def _describe(module: ModelModule, spec, settings, steps: int,
              dataset) -> List[str]:
  model = 'built-in skip-gram' if module.builtin else (
      f'module file {module.path}')
  tables = ', '.join(f'{t.name} [{t.vocabulary_size}, {t.dim}]'
                     for t in spec.tables)
  return [f'model: {model}; {steps} steps of {settings.batch_size} '
          f'examples; optimizer {spec.optimizer.kind}; tables {tables}',
          'batch ids: ' + ', '.join(synthetic.shapes(dataset))]


def _verdict_line(verdict: compare.Verdict) -> str:
  """AGREE, or DIFFER naming the first and the worst difference."""
  rule = (f'|A-B| <= {compare.RELATIVE:g} * max|B| + {compare.ABSOLUTE:g}')
  if verdict.agrees:
    return (f'AGREE: every table, slot, dense variable and loss, at every '
            f'step, within {rule}')
  first, worst = verdict.first_differing(), verdict.worst()
  return (f'DIFFER: first {first.name} at step {first.step} (max |A-B| '
          f'{first.max_abs:.3e} > {first.tolerance:.3e}'
          f'{", " + first.note if first.note else ""}); worst {worst.name} '
          f'at step {worst.step}; tolerance {rule}')


def _start(pair: trainers.Pair, element_spec, decay, steps: int,
           perturb: str, workdir: str):
  """(reference, candidate, what was perturbed): both built, the candidate
  restored from the reference's initial state, then the reference perturbed
  as asked."""
  perturbed = ''
  if perturb == options.LEARNING_RATE:
    perturbed = (f'B\'s learning rate at step {steps // 2} '
                 f'x{trainers.LEARNING_RATE_FACTOR}')
  reference = pair.reference.make(
      trainers.off_at(decay, steps // 2) if perturbed else decay)
  reference.build(element_spec)
  candidate = pair.candidate.make(decay)
  candidate.build(element_spec)
  checkpoint_values.start_from(candidate, checkpoint_values.write_initial(
      reference, os.path.join(workdir, 'initial')))
  if perturb and not perturbed:
    perturbed = 'B\'s initial ' + trainers.perturb_initial(reference, perturb)
  return reference, candidate, perturbed


def run(module: ModelModule, settings, tpu: str = device.AUTO,
        steps: int = options.DEFAULT_STEPS, workdir: str = '',
        vocabulary_size: int = options.DEFAULT_VOCABULARY_SIZE,
        perturb: str = '') -> Result:
  """Compares two trainers of `module` with `settings` (a TrainerConfig)
  over `steps` steps; checkpoints go under `workdir`. `perturb` (one of
  options.PERTURBATIONS) alters the reference to show a failing check."""
  _check(steps, perturb)
  strategy, device_line = connect(tpu)
  with _float32_matmuls(strategy is not None):
    return _compare(module, settings, strategy, device_line, steps, workdir,
                    vocabulary_size, perturb)


@contextlib.contextmanager
def _float32_matmuls(on_tpu: bool):
  """On a TPU, float32 matmuls at full precision while the self-test runs.

  XLA compiles a TPU's float32 matmuls and convolutions at DEFAULT
  precision (bfloat16 passes, about 3 decimal digits) unless TensorFloat-32
  execution is off (then HIGHEST): at DEFAULT a dense model's TPU values
  would part from the CPU's by far more than the tolerance, whatever the
  trainers do. `run --tpu` keeps TensorFlow's default.
  """
  before = tf.config.experimental.tensor_float_32_execution_enabled()
  if on_tpu:
    tf.config.experimental.enable_tensor_float_32_execution(False)
  try:
    yield
  finally:
    tf.config.experimental.enable_tensor_float_32_execution(before)


def _compare(module: ModelModule, settings, strategy, device_line: str,
             steps: int, workdir: str, vocabulary_size: int,
             perturb: str) -> Result:
  """`run` once the device is known."""
  module = trainers.deterministic(module)
  ctx = synthetic.context(module, settings, vocabulary_size)
  spec = synthetic.resolved_spec(module, ctx)
  dataset = synthetic.batches(module, ctx, spec, steps, settings.seed)
  pair = trainers.pair(module, spec, ctx, strategy)
  lines = [f'selftest: {device_line}', f'A (candidate): {pair.candidate.name}',
           f'B (reference): {pair.reference.name}']
  lines += _describe(module, spec, settings, steps, dataset)
  if pair.note:
    lines.append(f'note: {pair.note}')
  if strategy is not None:
    lines.append('precision: float32 matmuls at full precision on the TPU '
                 '(TensorFloat-32 off), as on the CPU; `run --tpu` keeps '
                 'TensorFlow\'s default (bfloat16 passes)')
  tf.random.set_seed(settings.seed)  # the tables' initial values
  reference, candidate, perturbed = _start(
      pair, dataset.element_spec, LinearDecay(planned_steps(settings, steps)),
      steps, perturb, workdir)
  if perturbed:
    lines.append(f'perturbed: {perturbed}')
  stepped = lockstep.run(reference, candidate, dataset, steps, spec, workdir)
  verdict = stepped.verdict()
  lines += compare.table(verdict, stepped.candidate_losses,
                         stepped.reference_losses)
  lines.append(_verdict_line(verdict))
  return Result(verdict.agrees, verdict, lines)
