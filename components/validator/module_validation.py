"""The validation of a module file's model: restore, health, its metrics.

1. Restore the Model on CPU with its own module (`<model>/user_module.py`):
   `TPUEmbeddingForServing(optimizer=None)` for the tables, the module's
   dense model beside them, every signature run once; every variable the
   model has must come from the checkpoint. A failure is the verdict.
2. Health of every table (finite, not collapsed, norms in bounds) and of the
   dense variables (finite).
3. The module's `eval_fn` on the Examples' eval split, through what each
   model serves: the candidate's signatures in-process, the pushed
   baseline's loaded from its SavedModel, and an untrained model's (same
   module, fresh variables).
4. Gates: every metric of METRICS better than the untrained model's (the
   floor), then, with a baseline, within `regression_margin` of it in the
   direction METRICS gives.
A baseline the module's `eval_fn` cannot score (another model's
signatures) is a warning, not a gate.
"""

import dataclasses
import shutil
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from components.validator import baseline as baseline_lib
from components.validator import gates as gates_lib
from components.validator import metrics
from components.validator.config import ValidatorConfig
from components.validator.validation import Validation
from components.validator.validation import finish
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models import model_restore
from tpu_embeddings.models import served
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.spec import embedding_spec

# What restoring a Model can raise: a verdict, not a crash. (An error of the
# module's own code once restored, e.g. in eval_fn, is a failure to fix.)
RESTORE_ERRORS = (checkpoint_restore.CheckpointError, embedding_spec.SpecError,
                  vocabulary_file.VocabularyError, FileNotFoundError,
                  ModelModuleError, ValueError, tf.errors.OpError)


@dataclasses.dataclass
class ServedBaseline:
  """A pushed serving version, loaded."""
  path: str
  version: int
  loaded: Any
  manifest: Dict[str, Any]


def read_served(push_root: str, version: int) -> ServedBaseline:
  path = push_layout.version_dir(push_root, 'serving', version)
  try:
    loaded = tf.saved_model.load(path)
  except Exception as e:
    raise baseline_lib.BaselineError(
        f'baseline {path} cannot be loaded ({type(e).__name__}: '
        f'{(str(e).splitlines() or [""])[0]})') from e
  return ServedBaseline(path, version, loaded,
                        push_layout.read_manifest(push_root, 'serving',
                                                  version))


def dense_finite_gate(model) -> gates_lib.Gate:
  variables = list(model.variables) if model is not None else []
  bad = sum(int(np.size(v.numpy()) - np.isfinite(v.numpy()).sum())
            for v in variables)
  return gates_lib.Gate(
      'health/dense/finite', bad == 0,
      f'dense model: {len(variables)} variables, ' +
      ('all values finite' if bad == 0 else f'{bad} NaN/Inf values'),
      float(bad), 0.0, '==')


def floor_gates(candidate: Dict[str, Optional[float]],
                untrained: Dict[str, Optional[float]],
                directions: Dict[str, str]) -> List[gates_lib.Gate]:
  """Each metric better than an untrained model's: a model that learned
  nothing cannot pass."""
  found = []
  for metric, direction in directions.items():
    value, floor = candidate.get(metric), untrained.get(metric)
    name = f'untrained/{metric}'
    if floor is None:
      found.append(gates_lib.Gate(name, True, f'{metric}: the untrained '
                                  'model has no value; not compared'))
      continue
    higher = direction == 'higher'
    ok = value is not None and (value > floor if higher else value < floor)
    op = '>' if higher else '<'
    shown = 'none' if value is None else f'{value:.6g}'
    found.append(gates_lib.Gate(
        name, ok, f'{metric} {shown} {op} untrained model {floor:.6g}: ' +
        ('ok' if ok else 'FAILED (no better than untrained variables)'),
        value, floor, op))
  return found


def _score(module, serve, ctx, what: str, report) -> Optional[Dict]:
  """The module's metrics of one model's signatures, or None (warned)."""
  try:
    return module.evaluate(serve, ctx)
  except Exception as e:
    if what == 'candidate':
      raise
    report['warnings'].append(
        f'{what}: eval_fn cannot score it ({type(e).__name__}: '
        f'{(str(e).splitlines() or [""])[0][:200]}); not compared')
    return None


def _new_report(model_uri: str, examples_uri: str, config: ValidatorConfig,
                push_root: str, module, found, unreadable) -> Dict[str, Any]:
  return {
      'current_model': model_uri,
      'module_file': module.path,
      'baseline_model': found.path if found else '',
      'baseline_version': found.version if found else None,
      'baseline_unreadable': [u.to_dict() for u in unreadable],
      'parameters': {
          'metrics': module.metrics, 'push_root': push_root,
          'max_eval_examples': config.max_eval_examples,
          'thresholds': dataclasses.asdict(config.thresholds())},
      'eval_data': {'examples': examples_uri, 'split': 'eval'},
      'metrics': {'candidate': None, 'baseline': None, 'untrained': None},
      'health': {'candidate': {}},
      'warnings': [],
  }


def _checks(restored, serving, config, report, found) -> List[Any]:
  """Health and quality gates of a restored candidate (into `report`)."""
  gates = [gates_lib.restore_gate(None)]
  for t in restored.spec.tables:
    health = metrics.table_health(restored.table(t.name).numpy())
    report['health']['candidate'][t.name] = health
    gates += gates_lib.health_gates(t.name, health, config.thresholds())
  gates.append(dense_finite_gate(restored.model))
  module, ctx = restored.module, restored.ctx
  if not module.has_eval:
    report['warnings'].append('the module defines no eval_fn: quality is '
                              'not gated')
    return gates
  scores = report['metrics']
  scores['candidate'] = _score(module, serving.served(), ctx, 'candidate',
                               report)
  with tempfile.TemporaryDirectory(prefix='untrained-') as directory:
    untrained = model_restore.untrained(restored, ctx.seed)
    scores['untrained'] = _score(
        module, untrained.serving_model(untrained.write_vocabularies(
            directory)).served(), ctx, 'untrained model', report)
  directions = module.metrics
  gates += floor_gates(scores['candidate'], scores['untrained'] or {},
                       directions)
  if found is not None:
    scores['baseline'] = _score(module, served.from_loaded(found.loaded), ctx,
                                f'baseline version {found.version}', report)
  if scores['baseline'] is not None:
    gates += gates_lib.baseline_gates(
        scores['candidate'], scores['baseline'],
        config.thresholds().regression_margin,
        higher_is_better={m: d == 'higher' for m, d in directions.items()})
  return gates


def validate(model_uri: str, examples_uri: str, config: ValidatorConfig,
             module, push_root: str = '') -> Validation:
  """Runs every check of the module file's Model at `model_uri`."""
  found, unreadable = baseline_lib.find_baseline(push_root, read_served)
  report = _new_report(model_uri, examples_uri, config, push_root, module,
                       found, unreadable)
  try:
    ctx = model_restore.context(model_uri, module, [examples_uri],
                                config.max_eval_examples)
    restored = model_restore.restore(model_uri, module, ctx)
    directory = tempfile.mkdtemp(prefix='vocabularies-')
    serving = restored.serving_model(restored.write_vocabularies(directory))
    restored.check_matched()
  except RESTORE_ERRORS as e:
    logging.error('CheckpointValidator: %s', e)
    gates = [gates_lib.restore_gate(f'{type(e).__name__}: {e}')]
    return Validation(finish(report, gates))
  try:
    gates = _checks(restored, serving, config, report, found)
  finally:
    shutil.rmtree(directory, ignore_errors=True)
  first = restored.spec.tables[0].name
  return Validation(finish(report, gates),
                    metrics.row_norms(restored.table(first).numpy()))
