"""What the run summary adds to its figures: warnings about the input, the
store and passed-over versions, how the training started, and its final
loss in words."""

import json
import os
from typing import Any, Dict, List

from components import keys
from tpu_embeddings.core import text


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
  """How the model's training started: the tables seeded from a base model
  (with what became of its dense model), or every table initialized; ''
  without a training."""
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
  return f'cold start: {f"tables {tables} " if tables else ""}initialized'
