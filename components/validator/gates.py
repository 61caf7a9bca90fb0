"""Blessing gates: numeric health, the frequency-only model, absolute
thresholds and the pushed baseline.

Each gate is one named check with its value, its limit, pass/fail and a
one-line reason; the model is blessed only when every gate passes. By default
a healthy table must have a held-out skip-gram loss below that of the best
model that knows only token counts (`tpu_embeddings.models.frequency_model`):
an untrained, collapsed or diverged table cannot be below it, and word2vec
tables on real text are. Ranking tokens by frequency at held-out retrieval
(`beat_popularity`) is optional: on text, frequent context words make that
ranking unbeatable even for good vectors. With no baseline the baseline gates
do not apply.
"""

import dataclasses
from typing import Any, Dict, List, Optional

from tpu_embeddings.core import settings

# Quality metrics the gates know, and whether higher is better.
HIGHER_IS_BETTER = {
    'eval_loss': False,
    'recall_at_k': True,
    'spearman': True,
    'related_recall_at_k': True,
    'analogy_accuracy': True,
}
# A held-out loss within this fraction of an untrained table's is a table
# that learned nothing.
UNTRAINED_FRACTION = 0.01


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
    limits = {'eval_loss': self.max_eval_loss,
              'recall_at_k': self.min_recall_at_k,
              'spearman': self.min_spearman,
              'related_recall_at_k': self.min_related_recall_at_k,
              'analogy_accuracy': self.min_analogy_accuracy}
    return {m: v for m, v in limits.items() if v is not None}


@dataclasses.dataclass
class Gate:
  name: str
  passed: bool
  reason: str
  value: Optional[float] = None
  limit: Optional[float] = None
  comparison: str = ''

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


def _at_most(name: str, value: Optional[float], limit: float, what: str,
             over: str, failure: str) -> Gate:
  """A health gate passing when `value` <= `limit` (None fails)."""
  ok = value is not None and value <= limit
  return Gate(name, ok, f'{what} ' + ('<=' if ok else over) + f' {limit:g}'
              + ('' if ok else failure), value, limit, '<=')


def popularity_gate(candidate: Optional[float],
                    popularity: Optional[float]) -> Gate:
  """Held-out recall@k above the popularity ranking's (same pairs, same k)."""
  name = 'popularity/recall_at_k'
  if popularity is None:
    return Gate(name, True, 'recall_at_k: no query to rank; not compared')
  if candidate is None:
    return Gate(name, False, 'recall_at_k: not computed', None, popularity,
                '>')
  ok = candidate > popularity
  return Gate(name, ok, f'recall_at_k {_fmt(candidate)} > popularity ranking '
              f'{_fmt(popularity)}: ' + ('ok' if ok else
                                         'FAILED (no better than ranking '
                                         'tokens by frequency)'),
              candidate, popularity, '>')


def frequency_gate(candidate: Optional[float], frequency: Optional[float],
                   untrained: float) -> Gate:
  """Held-out loss below the frequency-only model's (same pairs)."""
  name = 'frequency/eval_loss'
  if frequency is None:
    return Gate(name, True, 'eval_loss: no frequency-only loss; not compared')
  if candidate is None:
    return Gate(name, False, 'eval_loss: not computed (non-finite scores)',
                None, frequency, '<')
  if abs(candidate - untrained) <= UNTRAINED_FRACTION * untrained:
    return Gate(name, False, f'eval_loss {_fmt(candidate)} stayed at an '
                f'untrained table\'s {_fmt(untrained)}: the table learned '
                'nothing (train longer with trainer.epochs, or raise '
                'table.learning_rate)', candidate, frequency, '<')
  ok = candidate < frequency
  return Gate(name, ok, f'eval_loss {_fmt(candidate)} < frequency-only model '
              f'{_fmt(frequency)}: ' + ('ok' if ok else
                                        'FAILED (the table predicts held-out '
                                        'contexts no better than token '
                                        'counts do)'),
              candidate, frequency, '<')


def absolute_gates(metrics: Dict[str, Optional[float]],
                   thresholds: Thresholds) -> List[Gate]:
  return [_compare(f'absolute/{m}', metrics.get(m), limit,
                   HIGHER_IS_BETTER[m], m)
          for m, limit in thresholds.absolute().items()]


def baseline_limit(metric: str, baseline: float, margin: float,
                   higher_is_better: Optional[Dict[str, bool]] = None
                   ) -> float:
  """The worst candidate value still within `margin` of the baseline."""
  slack = margin * abs(baseline)
  higher = (higher_is_better or HIGHER_IS_BETTER)[metric]
  return baseline - slack if higher else baseline + slack


def baseline_gates(candidate: Dict[str, Optional[float]],
                   baseline: Dict[str, Optional[float]],
                   margin: float,
                   not_comparable: Optional[Dict[str, str]] = None,
                   higher_is_better: Optional[Dict[str, bool]] = None
                   ) -> List[Gate]:
  """Candidate vs baseline on every metric the baseline has a value for
  (skip-gram's metrics, or a module's METRICS as {metric: higher?});
  `not_comparable` maps a metric to why the two cannot be compared."""
  gates = []
  directions = higher_is_better or HIGHER_IS_BETTER
  for metric, higher in directions.items():
    if metric not in baseline and metric not in candidate:
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
    limit = baseline_limit(metric, base, margin, directions)
    gate = _compare(f'baseline/{metric}', candidate.get(metric), limit, higher,
                    f'{metric} vs baseline {_fmt(base)} (margin {margin:g})')
    gates.append(gate)
  return gates


def blessed(gates: List[Gate]) -> bool:
  return bool(gates) and all(g.passed for g in gates)


def summary(gates: List[Gate]) -> str:
  failed = [g for g in gates if not g.passed]
  if not failed:
    return f'blessed: all {len(gates)} gates passed'
  return 'not blessed: ' + '; '.join(g.reason for g in failed)
