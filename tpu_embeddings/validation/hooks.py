"""The validation hooks of a model's module, with their defaults.

Every model is validated by one path (`validate.py`); what differs is what
its module declares:

  METRICS, eval_fn(serve, ctx)  the metrics of one model, through `serve`
        (`tpu_embeddings.models.served.Served`: its signatures by name, and
        `serve.rows(table)`, a table's rows where the model serves them).
  references_fn(ctx) -> {name: {'label': str, 'failure': str,
        'metrics': {metric: value}}}: models the candidate is compared with
        (e.g. skip-gram's frequency-only model). Default: none but the
        untrained model, which the validator scores itself through eval_fn
        unless the module gives an 'untrained' reference.
  floors_fn(ctx) -> {metric: [reference name, ...]}: the references each
        metric must beat. Default: every metric the untrained model's.
  details_fn(serves, ctx) -> {'sections': [{'title', 'note', 'columns',
        'rows'}], 'parameters': {...}, 'eval_data': {...}, 'warnings':
        [...]}: more for the report; `serves`: {role: Served} of the
        candidate and baseline scored.

A module file's hooks are called through `ModelModule.hook`: what they raise
is a one-line UserCodeError naming the module file.
"""

from typing import Any, Dict, List, Mapping

from tpu_embeddings.models import served as served_lib

UNTRAINED = served_lib.UNTRAINED
UNTRAINED_REFERENCE = {'label': 'untrained model',
                       'failure': 'no better than untrained variables'}


def _first_line(e: Exception) -> str:
  return (str(e).splitlines() or [''])[0][:200]


def evaluate(module, serve: served_lib.Served, ctx,
             warnings: List[str]) -> Any:
  """The module's metrics of one model, or None when the module has no
  eval_fn, or cannot score a model other than the candidate (warned)."""
  if not module.has_eval:
    return None
  try:
    return module.evaluate(serve, ctx)
  except Exception as e:
    if serve.role == served_lib.CANDIDATE:
      raise
    warnings.append(f'{serve.label}: eval_fn cannot score it '
                    f'({type(e).__name__}: {_first_line(e)}); not compared')
    return None


def references(module, ctx) -> Dict[str, Dict[str, Any]]:
  """{name: reference} the module gives (references_fn), checked."""
  hook = module.hook('references_fn')
  found = hook(ctx) if hook else {}
  if not isinstance(found, Mapping) or not all(
      isinstance(r, Mapping) and isinstance(r.get('metrics'), Mapping)
      for r in found.values()):
    raise ValueError(f'module file {module.path}: references_fn must return '
                     '{name: {"label": ..., "metrics": {metric: value}}}')
  return {name: dict(r) for name, r in found.items()}


def floors(module, ctx) -> Dict[str, List[str]]:
  """{metric: [reference, ...]} each declared metric must beat."""
  hook = module.hook('floors_fn')
  if hook is None:
    return {metric: [UNTRAINED] for metric in module.metrics}
  found = hook(ctx)
  if not isinstance(found, Mapping) or not all(
      m in module.metrics and isinstance(r, (list, tuple))
      for m, r in found.items()):
    raise ValueError(f'module file {module.path}: floors_fn must return '
                     '{metric of METRICS: [reference name, ...]}')
  return {m: list(r) for m, r in found.items()}


def details(module, serves: Mapping[str, served_lib.Served], ctx
            ) -> Dict[str, Any]:
  """What details_fn adds to the report ({} without one)."""
  hook = module.hook('details_fn')
  found = hook(serves, ctx) if hook else {}
  if not isinstance(found, Mapping) or set(found) - {
      'sections', 'parameters', 'eval_data', 'warnings'}:
    raise ValueError(f'module file {module.path}: details_fn must return a '
                     'dict of "sections", "parameters", "eval_data" and '
                     '"warnings"')
  return dict(found)
