"""Two trainers' checkpoints and losses compared, against one tolerance.

A value B of the reference and A of the candidate agree when

    max |A - B|  <=  RELATIVE * max |B|  +  ABSOLUTE

per variable (a table, an optimizer slot, a dense weight) and per step's
loss, each step taken by both from one state (lockstep.py). Both trainers
compute in float32 but sum in different orders (a TPU reduces over its
cores and in its own order; the CPU's fused op, TensorFlow's segment sums
and a tape's gradient each in theirs): a sum may round differently by about
1e-7 of its magnitude, and one step's update of a value by a few such
roundings. RELATIVE = 1e-4 leaves a hundred times that room, yet fails a
wrong row, a wrong slot, a learning rate off by 5% for one step or a missed
update: each moves a value by far more than 1e-4 of its variable's largest.
ABSOLUTE keeps a variable of zeros (an untouched slot) comparable.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence

import numpy as np

RELATIVE = 1e-4
ABSOLUTE = 1e-9


@dataclasses.dataclass(frozen=True)
class Difference:
  """One compared value: `name`, max |A - B|, the scale max |B|."""
  name: str
  max_abs: float
  scale: float
  note: str = ''  # why it failed beyond the numbers (shape, NaN)
  step: int = -1  # the step it was compared after (-1: none)

  @property
  def tolerance(self) -> float:
    return RELATIVE * self.scale + ABSOLUTE

  @property
  def relative(self) -> float:
    return self.max_abs / self.scale if self.scale else self.max_abs

  @property
  def agrees(self) -> bool:
    return not self.note and self.max_abs <= self.tolerance


def difference(name: str, candidate: np.ndarray, reference: np.ndarray,
               step: int = -1) -> Difference:
  """`candidate` against `reference` (after step `step`)."""
  a, b = np.asarray(candidate), np.asarray(reference)
  if a.shape != b.shape:
    return Difference(name, float('inf'), 0.0,
                      f'shape {list(a.shape)} vs {list(b.shape)}', step)
  if not b.size:
    return Difference(name, 0.0, 0.0, step=step)
  a, b = a.astype(np.float64), b.astype(np.float64)
  if not (np.isfinite(a).all() and np.isfinite(b).all()):
    same = np.array_equal(a, b, equal_nan=True)
    return Difference(name, 0.0 if same else float('inf'), 0.0,
                      '' if same else 'NaN or Inf on one side', step)
  return Difference(name, float(np.max(np.abs(a - b))),
                    float(np.max(np.abs(b))), step=step)


def variables(candidate: Dict[str, np.ndarray],
              reference: Dict[str, np.ndarray],
              step: int = -1) -> List[Difference]:
  """Every variable of either side, in the reference's order; one missing
  from a side is a difference."""
  names = list(reference) + sorted(set(candidate) - set(reference))
  found = []
  for name in names:
    if name not in candidate or name not in reference:
      side = 'A' if name not in candidate else 'B'
      found.append(Difference(name, float('inf'), 0.0,
                              f'missing from {side}', step))
    else:
      found.append(difference(name, candidate[name], reference[name], step))
  return found


def step_losses(candidate: Sequence[float],
                reference: Sequence[float]) -> List[Difference]:
  """Each step's loss compared; a missing step is a difference."""
  if len(candidate) != len(reference):
    return [Difference('loss', float('inf'), 0.0,
                       f'{len(candidate)} steps vs {len(reference)}')]
  return [difference('loss', np.float64(a), np.float64(b), i)
          for i, (a, b) in enumerate(zip(candidate, reference))]


@dataclasses.dataclass(frozen=True)
class Verdict:
  """Every compared variable and step, and which differ."""
  variables: List[Difference]
  losses: List[Difference]

  @property
  def agrees(self) -> bool:
    return all(d.agrees for d in self.variables + self.losses)

  def first_differing(self) -> Optional[Difference]:
    """The difference of the earliest step; within a step the first
    variable (tables, slots, dense, in order), then the loss."""
    failing = [d for d in self.variables + self.losses if not d.agrees]
    return min(failing, key=lambda d: d.step, default=None)

  def worst(self) -> Optional[Difference]:
    """The variable or step furthest beyond its tolerance."""
    failing = [d for d in self.variables + self.losses if not d.agrees]
    return max(failing, key=lambda d: d.max_abs / d.tolerance,
               default=None)


def _row(d: Difference) -> str:
  verdict = 'ok' if d.agrees else f'DIFFERS {d.note}'.rstrip()
  return (f'  {d.name:<48} {d.step:>5} {d.max_abs:>11.3e} {d.scale:>11.3e} '
          f'{d.relative:>10.2e}  {verdict}')


def table(verdict: Verdict, candidate: Sequence[float],
          reference: Sequence[float]) -> List[str]:
  """The report's lines: one per variable, one per step."""
  header = (f'  {"variable":<48} {"step":>5} {"max |A-B|":>11} '
            f'{"max |B|":>11} {"relative":>10}  verdict')
  lines = ['checkpoints (A: candidate, B: reference; each variable at its '
           'worst step):', header]
  lines += [_row(d) for d in verdict.variables]
  lines += ['losses step by step:',
            f'  {"step":>5} {"A":>14} {"B":>14} {"|A-B|":>11}  verdict']
  for i, d in enumerate(verdict.losses):
    a = candidate[i] if i < len(candidate) else float('nan')
    b = reference[i] if i < len(reference) else float('nan')
    lines.append(f'  {i:>5} {a:>14.7g} {b:>14.7g} {d.max_abs:>11.3e}  '
                 f'{"ok" if d.agrees else "DIFFERS " + d.note}'.rstrip())
  return lines
