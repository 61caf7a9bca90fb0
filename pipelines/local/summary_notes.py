"""What the run summary adds to its figures: warnings about the input, the
store and passed-over versions, the verdict, how the training started, and
its final loss in words."""

import json
import os
from typing import Any, Dict, List

from components import keys
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.core import text


def from_report(report: Dict[str, Any]) -> Dict[str, Any]:
  """The summary's fields from the validator's report.json: the metrics,
  the candidate's health, the failed gates, the warnings and the note on a
  blessed candidate worse than the baseline."""
  return {
      'metrics': report.get('metrics', {}),
      'health': (report.get('health') or {}).get('candidate') or {},
      'failed_gates': [g for g in report.get('gates', [])
                       if not g.get('passed', True)],
      'warnings': report.get('warnings', []),
      'worse_than_baseline': report.get('worse_than_baseline', ''),
  }


def warnings(summary: Dict[str, Any]) -> List[str]:
  """A replaced store; lines cut, tokens dropped and empty ids in the input;
  the validator's warnings, and damaged pushed versions it or the warm start
  passed over."""
  from components.validator import report as report_lib
  out = []
  if summary.get('store_note'):
    out.append(f'warning: {summary["store_note"]}')
  skipped = summary.get('input_skipped') or {}
  if skipped.get(keys.CAPPED_LINES) or skipped.get(keys.DROPPED_LONG_TOKENS):
    out.append(
        f'warning: input: {skipped[keys.CAPPED_LINES]} line(s) cut to their '
        f'first {text.MAX_TOKENS_PER_LINE} tokens, '
        f'{skipped[keys.DROPPED_LONG_TOKENS]} token(s) over '
        f'{text.MAX_TOKEN_BYTES} bytes dropped (first in '
        f'{skipped.get(keys.FIRST_SKIPPING_FILE)})')
  empty = {f: n for f, n in (summary.get('empty_ids') or {}).items() if n}
  if empty:
    out.append('warning: input: ' + ', '.join(
        f'{n} record(s) with an empty {f}' for f, n in sorted(empty.items()))
               + ' (trained as no token: an empty id looks up no row)')
  path = os.path.join(os.path.dirname(summary.get('report') or ''),
                      report_lib.REPORT_JSON)
  if summary.get('report') and os.path.exists(path):
    with open(path) as f:
      note = report_lib.unreadable_baseline_note(json.load(f))
    if note:
      out.append(f'warning: {note}')
  out += [f'warning: {w}' for w in summary.get('warnings') or []]
  for skipped in (summary.get('training') or {}).get('warm_start_skipped', []):
    out.append(f'warning: warm start: {skipped}')
  return out


def verdict(summary: Dict[str, Any]) -> str:
  """The `validation:` line: blessed (and worse than the baseline on which
  metrics, within the margin, with both figures) or why not."""
  blessed = summary.get('blessed')
  if blessed is None:
    return 'validation: not run'
  if not blessed:
    return f'validation: NOT BLESSED ({refused_by(summary)})'
  worse = summary.get('worse_than_baseline')
  return 'validation: BLESSED' + (f', but {worse}' if worse else '')


def refused_by(summary: Dict[str, Any]) -> str:
  """Why validation did not bless the model: each failed gate and its
  reason."""
  return '; '.join(
      f'{g.get("name")}: {g.get("reason", "failed")}'
      for g in summary.get('failed_gates', [])) or 'see report'


def final_loss(summary: Dict[str, Any]) -> str:
  """The training's last loss; for a NaN/Inf one (recorded as None), which
  of the validated tables hold NaN/Inf."""
  loss = (summary.get('training') or {}).get('final_loss')
  if loss is not None:
    return str(loss)
  tables = sorted(name for name, health in (summary.get('health') or {}).items()
                  if isinstance(health, dict)
                  and health.get('nonfinite_values'))
  if not tables:
    return 'NaN/Inf'
  named = ', '.join(map(repr, tables))
  return (f'NaN/Inf (table {named} holds NaN/Inf)' if len(tables) == 1 else
          f'NaN/Inf (tables {named} hold NaN/Inf)')


def start(summary: Dict[str, Any]) -> str:
  """How the model's training started: every table seeded from a base model
  (with what became of its dense model), or every table and the dense model
  initialized; '' without a training."""
  training = summary.get('training') or {}
  if not training:
    return ''
  warm = training.get('warm_start')
  if warm:
    tables = ', '.join(warm.get('tables') or [])
    dense = f'; dense model {warm["dense"]}' if warm.get('dense') else ''
    return (f'warm start: {f"tables {tables} " if tables else ""}from '
            f'{warm.get("base_model")} ({warm.get("kept_tokens")} tokens '
            f'kept, {warm.get("new_tokens")} new, '
            f'{warm.get("dropped_tokens")} dropped{dense})')
  from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
  try:
    tables = ', '.join(t.name for t in EmbeddingSpec.load(
        summary.get('model') or '').tables)
  except (OSError, ValueError):
    tables = ''
  dense = ('; dense model initialized'
           if training.get(model_layout.DENSE_MODEL_KEY) else '')
  return (f'cold start: {f"tables {tables} " if tables else ""}initialized'
          f'{dense}')
