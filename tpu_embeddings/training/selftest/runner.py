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
4. Each trains `steps` steps on the same batches, with the same
   learning-rate schedule, and writes its checkpoint as `run` does.
5. Both checkpoints are read back on CPU as the validator reads them and
   compared, with every step's loss (compare.py). When they differ, the
   reference against itself from a start nudged by one rounding step tells
   a difference of the trainers from settings that amplify rounding
   (noise_floor.py).
"""

import dataclasses
import os
from typing import Any, List, Optional

import tensorflow as tf

from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.training import device
from tpu_embeddings.training import learning_rate
from tpu_embeddings.training.learning_rate import LinearDecay
from tpu_embeddings.training.selftest import checkpoint_values
from tpu_embeddings.training.selftest import compare
from tpu_embeddings.training.selftest import noise_floor
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


def _verdict_line(verdict: compare.Verdict,
                  floor: Optional[compare.Verdict]) -> str:
  """AGREE; DIFFER naming the first and the worst difference; or, when B
  against a nudged B differs too (`floor`), INCONCLUSIVE."""
  rule = (f'|A-B| <= {compare.RELATIVE:g} * max|B| + {compare.ABSOLUTE:g}')
  if verdict.agrees:
    return (f'AGREE: every table, slot, dense variable and step loss within '
            f'{rule}')
  if floor is not None and not floor.agrees:
    moved = floor.worst()
    return (f'INCONCLUSIVE: B alone, its tables moved by one float32 '
            f'rounding step ({noise_floor.NUDGE:.1e}), moves {moved.name} by '
            f'{moved.max_abs:.3e} (> {moved.tolerance:.3e}): these settings '
            'amplify rounding, so no two float32 trainers agree to the '
            'tolerance; rerun with trainer.learning_rate_decay=true (its '
            'warm-up) or a lower learning rate')
  first, worst = verdict.first_differing(), verdict.worst()
  return (f'DIFFER: first {first.name} (max |A-B| {first.max_abs:.3e} > '
          f'{first.tolerance:.3e}{", " + first.note if first.note else ""}); '
          f'worst {worst.name}; tolerance {rule}')


@dataclasses.dataclass
class _Start:
  """Both trainers built from one state; the reference's own start and
  schedule (a perturbed one's), for the noise floor."""
  reference: Any
  candidate: Any
  reference_decay: Any
  reference_start: str
  perturbed: str


def _start(pair: trainers.Pair, element_spec, decay, steps: int,
           perturb: str, workdir: str) -> _Start:
  """Both trainers built, the candidate restored from the reference's
  initial state, then the reference perturbed as asked."""
  perturbed = ''
  reference_decay = decay
  if perturb == options.LEARNING_RATE:
    perturbed = (f'B\'s learning rate at step {steps // 2} '
                 f'x{trainers.LEARNING_RATE_FACTOR}')
    reference_decay = trainers.off_at(decay, steps // 2)
  reference = pair.reference.make(reference_decay)
  reference.build(element_spec)
  candidate = pair.candidate.make(decay)
  candidate.build(element_spec)
  checkpoint_values.start_from(candidate, checkpoint_values.write_initial(
      reference, os.path.join(workdir, 'initial')))
  if perturb and not perturbed:
    perturbed = 'B\'s initial ' + trainers.perturb_initial(reference, perturb)
  return _Start(reference, candidate, reference_decay,
                checkpoint_values.write_initial(
                    reference, os.path.join(workdir, 'reference-start')),
                perturbed)


def _checkpoints(spec, steps: int, workdir: str, **adapters):
  """{name: checkpoint values} of each adapter, saved and read back."""
  values = {}
  for name, adapter in adapters.items():
    uri = os.path.join(workdir, name)
    path = checkpoint_values.save(adapter, spec, uri, steps)
    values[name] = checkpoint_values.read(spec, uri, path)
  return values


def run(module: ModelModule, settings, tpu: str = device.AUTO,
        steps: int = options.DEFAULT_STEPS, workdir: str = '',
        vocabulary_size: int = options.DEFAULT_VOCABULARY_SIZE,
        perturb: str = '') -> Result:
  """Compares two trainers of `module` with `settings` (a TrainerConfig)
  over `steps` steps; checkpoints go under `workdir`. `perturb` (one of
  options.PERTURBATIONS) alters the reference to show a failing check."""
  _check(steps, perturb)
  strategy, device_line = connect(tpu)
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
  tf.random.set_seed(settings.seed)  # the tables' initial values
  start = _start(pair, dataset.element_spec,
                 LinearDecay(planned_steps(settings, steps)), steps, perturb,
                 workdir)
  if start.perturbed:
    lines.append(f'perturbed: {start.perturbed}')
  reference_losses = trainers.train(start.reference, dataset, steps)
  candidate_losses = trainers.train(start.candidate, dataset, steps)
  values = _checkpoints(spec, steps, workdir, candidate=start.candidate,
                        reference=start.reference)
  verdict = compare.Verdict(
      _variables(values['candidate'], values['reference']),
      compare.step_losses(candidate_losses, reference_losses))
  lines += compare.table(verdict, candidate_losses, reference_losses)
  floor = None
  if not verdict.agrees:
    floor = noise_floor.verdict(
        pair.reference.make, start.reference_decay, start.reference_start,
        dataset, spec, steps, workdir, values['reference'], reference_losses)
  lines.append(_verdict_line(verdict, floor))
  return Result(verdict.agrees, verdict, lines)


def _variables(candidate, reference) -> List[compare.Difference]:
  """Every variable of either checkpoint, in the reference's order."""
  names = list(reference) + sorted(set(candidate) - set(reference))
  found = []
  for name in names:
    if name not in candidate or name not in reference:
      side = 'A' if name not in candidate else 'B'
      found.append(compare.Difference(name, float('inf'), 0.0,
                                      f'missing from {side}'))
    else:
      found.append(compare.difference(name, candidate[name], reference[name]))
  return found
