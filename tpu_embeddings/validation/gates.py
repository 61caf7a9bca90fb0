"""Blessing gates: numeric health, floors, absolute limits, the baseline.

Each gate is one named check with its value, its limit, pass/fail and a
one-line reason; the model is blessed only when every gate passes:

* health of every table (finite, not collapsed, norms in bounds) and of the
  dense variables (finite);
* floors: each metric strictly better than the references the model names
  (`floor_gate`; by default an untrained model's; skip-gram's held-out loss
  the frequency-only model's, see tpu_embeddings/models/skipgram_eval.py);
* absolute limits a user sets (`Thresholds.absolute`) on declared metrics;
* within `regression_margin` of the pushed baseline, in the direction the
  module's METRICS give. With no baseline the baseline gates do not apply.
  A candidate worse than the baseline but within the margin passes, and
  says so (baseline_note.py): with both figures.
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from tpu_embeddings.core import settings

# A held-out loss within this fraction of an untrained table's is a table
# that learned nothing.
UNTRAINED_FRACTION = 0.01
# {Thresholds field: the metric it limits}: a limit applies only to a model
# that declares its metric.
ABSOLUTE_LIMITS = {'max_eval_loss': 'eval_loss',
                   'min_recall_at_k': 'recall_at_k',
                   'min_spearman': 'spearman',
                   'min_related_recall_at_k': 'related_recall_at_k',
                   'min_analogy_accuracy': 'analogy_accuracy'}


@dataclasses.dataclass(frozen=True)
class Thresholds(settings.Settings):
  """Limits for blessing. None disables an absolute quality gate.

  `regression_margin` is the fraction of the baseline's value the candidate
  may lose on any quality metric (0.05: a loss up to 5% higher, a recall up
  to 5% lower). `beat_frequency_model`: the held-out loss must be below that
  of the best model knowing only token counts; a model of tied vectors (no
  contexts table), whose held-out loss stays near the untrained value even
  when its neighbours are good, must beat the popularity ranking instead.
  `beat_popularity`: recall@k must exceed that of ranking tokens by
  frequency, whatever the model. A baseline knowing less
  than `min_baseline_coverage` of the evaluation vocabulary is flagged: its
  comparison says little. `max_mean_cosine` refuses a collapsed table: word2vec
  vectors of a 58k-token text reach 0.97, collapsed rows 1.
  """
  WHAT = 'validator'

  # Cosines, recalls, accuracies and coverage are what they measure: in
  # [-1, 1] or [0, 1].
  max_mean_cosine: float = settings.bounded(0.99, -1.0, 1.0)
  # Initial rows have norms near 0.5 / sqrt(dim) and trained word2vec rows
  # of a few units; a limit below 1e-3 refuses every table, one above 1e6
  # nothing a float32 dot product survives.
  max_row_norm: float = settings.bounded(100.0, 1e-3, 1e6)
  # A skip-gram loss starts at (1 + negatives) ln 2, at most ~700; 10,000
  # leaves room for a module's own loss.
  max_eval_loss: Optional[float] = settings.bounded(None, 0.0, 1e4)
  min_recall_at_k: Optional[float] = settings.bounded(None, 0.0, 1.0)
  min_spearman: Optional[float] = settings.bounded(None, -1.0, 1.0)
  min_related_recall_at_k: Optional[float] = settings.bounded(None, 0.0, 1.0)
  min_analogy_accuracy: Optional[float] = settings.bounded(None, 0.0, 1.0)
  # A fraction of the baseline's value: at 1 a recall may fall to zero and
  # a loss double, so more would be no gate.
  regression_margin: float = settings.bounded(0.05, 0.0, 1.0)
  beat_frequency_model: bool = True
  beat_popularity: bool = False
  min_baseline_coverage: float = settings.bounded(0.5, 0.0, 1.0)

  def thresholds(self) -> 'Thresholds':
    """Just the limits (of a config deriving from Thresholds)."""
    return Thresholds(**{f.name: getattr(self, f.name)
                         for f in dataclasses.fields(Thresholds)})

  def absolute(self) -> Dict[str, float]:
    """{metric: limit} of the enabled absolute quality gates."""
    limits = {metric: getattr(self, field)
              for field, metric in ABSOLUTE_LIMITS.items()}
    return {m: v for m, v in limits.items() if v is not None}


@dataclasses.dataclass
class Gate:
  """One check. `reference`: the baseline's own value, for a baseline gate
  (its `limit` is that value less the margin)."""
  name: str
  passed: bool
  reason: str
  value: Optional[float] = None
  limit: Optional[float] = None
  comparison: str = ''
  reference: Optional[float] = None

  def worse_than_reference(self) -> bool:
    """Whether `value` is on the wrong side of `reference`, in the gate's
    direction (False without both)."""
    if self.value is None or self.reference is None:
      return False
    if self.comparison == '>=':
      return self.value < self.reference
    return self.comparison == '<=' and self.value > self.reference

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)


def _fmt(x: Optional[float]) -> str:
  return 'none' if x is None else f'{x:.6g}'


def _compare(name: str, value: Optional[float], limit: float,
             higher_is_better: bool, what: str) -> Gate:
  op = '>=' if higher_is_better else '<='
  if value is None:
    return Gate(name, False, f'{what}: not computed (no data to score it)',
                None, limit, op)
  ok = value >= limit if higher_is_better else value <= limit
  verdict = 'ok' if ok else 'FAILED'
  return Gate(name, ok, f'{what} {_fmt(value)} {op} {_fmt(limit)}: {verdict}',
              value, limit, op)


def restore_gate(error: Optional[str]) -> Gate:
  if error:
    return Gate('restore', False, error)
  return Gate('restore', True, 'checkpoint restored completely (every table, '
              'spec shapes, no optimizer slots)')


def health_gates(table: str, health: Dict[str, Any],
                 thresholds: Thresholds) -> List[Gate]:
  """No NaN/Inf, no collapse (mean pairwise cosine), no exploded norms.

  Collapse and norms are measured on the finite rows; a table whose rows
  are (nearly) all NaN/Inf fails them saying so, not with a missing figure.
  """
  gates = []
  bad = health['nonfinite_values']
  not_finite = f' not measured: table {table!r} holds NaN/Inf'

  gates.append(Gate(
      f'health/{table}/finite', bad == 0,
      f'table {table!r}: ' + ('all values finite' if bad == 0 else
                              f'{bad} NaN/Inf values in '
                              f'{health["nonfinite_rows"]} rows'),
      float(bad), 0.0, '=='))
  cos = health['mean_pairwise_cosine']
  if cos is None:
    gates.append(Gate(
        f'health/{table}/not_collapsed', False,
        'collapse' + not_finite if bad else
        f'table {table!r}: collapsed (fewer than two non-zero finite rows)',
        None, thresholds.max_mean_cosine, '<='))
  else:
    gates.append(_at_most(
        f'health/{table}/not_collapsed', cos, thresholds.max_mean_cosine,
        f'table {table!r}: mean pairwise cosine {cos:.4f}', '>',
        ' (collapsed: rows are near-identical)'))
  norm = health['max_norm']
  if norm is None and bad:
    gates.append(Gate(f'health/{table}/norms', False, 'row norms' + not_finite,
                      None, thresholds.max_row_norm, '<='))
  else:
    gates.append(_at_most(
        f'health/{table}/norms', norm, thresholds.max_row_norm,
        f'table {table!r}: max row norm {_fmt(norm)}', 'exceeds',
        ' (exploded norms)'))
  return gates


def dense_finite_gate(values: Sequence[np.ndarray]) -> Gate:
  """No NaN/Inf in the dense model's variables (`values`: their arrays)."""
  bad = sum(int(np.size(v) - np.count_nonzero(np.isfinite(v)))
            for v in values)
  return Gate(
      'health/dense/finite', bad == 0,
      f'dense model: {len(values)} variables, ' +
      ('all values finite' if bad == 0 else f'{bad} NaN/Inf values'),
      float(bad), 0.0, '==')


def _at_most(name: str, value: Optional[float], limit: float, what: str,
             over: str, failure: str) -> Gate:
  """A health gate passing when `value` <= `limit` (None fails)."""
  ok = value is not None and value <= limit
  return Gate(name, ok, f'{what} ' + ('<=' if ok else over) + f' {limit:g}'
              + ('' if ok else failure), value, limit, '<=')


def floor_gate(metric: str, value: Optional[float], reference: str,
               found: Dict[str, Any], higher: bool,
               untrained: Optional[float] = None) -> Gate:
  """`value` strictly better than reference `found`'s (the same data).

  `found`: a reference as `references` gives it ({'label', 'failure',
  'metrics'}). `untrained`: the metric's value for an untrained model; a
  value within UNTRAINED_FRACTION of it learned nothing, whatever the
  reference.
  """
  name, label = f'{reference}/{metric}', found.get('label') or reference
  floor = (found.get('metrics') or {}).get(metric)
  op = '>' if higher else '<'
  if floor is None:
    return Gate(name, True, f'{metric}: the {label} has no value; not '
                'compared')
  if value is None:
    return Gate(name, False, f'{metric}: not computed (no data to score it, '
                'or non-finite scores)', None, floor, op)
  if (untrained is not None and
      abs(value - untrained) <= UNTRAINED_FRACTION * abs(untrained)):
    return Gate(name, False, f'{metric} {_fmt(value)} stayed at an '
                f'untrained model\'s {_fmt(untrained)}: the model learned '
                'nothing (train longer with trainer.epochs, or raise '
                'table.learning_rate)', value, floor, op)
  ok = value > floor if higher else value < floor
  failure = found.get('failure') or f'no better than the {label}'
  return Gate(name, ok, f'{metric} {_fmt(value)} {op} {label} {_fmt(floor)}: '
              + ('ok' if ok else f'FAILED ({failure})'), value, floor, op)


def absolute_gates(metrics: Dict[str, Optional[float]],
                   thresholds: Thresholds,
                   directions: Dict[str, str]) -> List[Gate]:
  """The enabled absolute limits of the metrics the model declares
  (`directions`: {metric: 'higher' | 'lower'})."""
  return [_compare(f'absolute/{m}', metrics.get(m), limit,
                   directions[m] == 'higher', m)
          for m, limit in thresholds.absolute().items() if m in directions]


def baseline_limit(baseline: float, margin: float, higher: bool) -> float:
  """The worst candidate value still within `margin` of the baseline."""
  slack = margin * abs(baseline)
  return baseline - slack if higher else baseline + slack


def baseline_gates(candidate: Dict[str, Optional[float]],
                   baseline: Dict[str, Optional[float]],
                   margin: float, directions: Dict[str, str],
                   not_comparable: Optional[Dict[str, str]] = None
                   ) -> List[Gate]:
  """Candidate vs baseline on every metric of `directions` (the module's
  METRICS) that either scored; `not_comparable` maps a metric to why the
  two cannot be compared."""
  gates = []
  for metric, direction in directions.items():
    higher = direction == 'higher'
    if candidate.get(metric) is None and baseline.get(metric) is None:
      continue
    if metric in (not_comparable or {}):
      gates.append(Gate(f'baseline/{metric}', True,
                        f'{metric}: not comparable ({not_comparable[metric]})'))
      continue
    base = baseline.get(metric)
    if base is None:
      gates.append(Gate(f'baseline/{metric}', True,
                        f'{metric}: baseline has no value; not compared'))
      continue
    limit = baseline_limit(base, margin, higher)
    gate = _compare(f'baseline/{metric}', candidate.get(metric), limit, higher,
                    f'{metric} vs baseline {_fmt(base)} (margin {margin:g})')
    gate.reference = base
    if gate.passed and gate.worse_than_reference():
      gate.reason += ', but worse than the baseline'
    gates.append(gate)
  return gates


def blessed(gates: List[Gate]) -> bool:
  return bool(gates) and all(g.passed for g in gates)


def summary(gates: List[Gate], note: str = '') -> str:
  """Blessed, with `note` (baseline_note.py) after it, or why not."""
  failed = [g for g in gates if not g.passed]
  if not failed:
    return f'blessed: all {len(gates)} gates passed' + (
        f', but {note}' if note else '')
  return 'not blessed: ' + '; '.join(g.reason for g in failed)
