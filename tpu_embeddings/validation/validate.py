"""One validation for every model: restore, health, metrics, gates, report.

1. The pushed baseline (`baseline.py`) is scored first, through what it
   serves, by the module's `eval_fn` (and its rows kept where it serves
   them); its SavedModel is released before the candidate is restored.
2. The candidate is restored on CPU with its own module
   (`tpu_embeddings.models.model_restore`: `TPUEmbeddingForServing(
   optimizer=None)` for the tables, the dense model beside them); every
   table must be in the checkpoint with its spec shape and a row per token
   of its vocabulary, every variable must come from the checkpoint. A
   failure is the verdict, not a crash.
3. Health of every table (finite, not collapsed, norms in bounds; read in
   place, no copy) and of the dense variables (finite).
4. The module's metrics (METRICS, `eval_fn`), floors against its references
   (`hooks.py`: by default an untrained model's), absolute limits, and the
   baseline within `regression_margin` in the direction METRICS gives (a
   blessed candidate worse than the baseline says so: `baseline_note.py`).
5. The report: metrics by model and reference, nearest neighbours of every
   table (candidate vs baseline), the module's details.

Bad settings or inputs (files, push root, eval data) raise a one-line error.
"""

import dataclasses
import shutil
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.core import tf_allocator
from tpu_embeddings.models import model_restore
from tpu_embeddings.models import served as served_lib
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.quality import metrics
from tpu_embeddings.spec import embedding_spec
from tpu_embeddings.validation import baseline as baseline_lib
from tpu_embeddings.validation import gates as gates_lib
from tpu_embeddings.validation import hooks
from tpu_embeddings.validation import model_views
from tpu_embeddings.validation import report_data
from tpu_embeddings.validation.config import ValidatorConfig

CANDIDATE = served_lib.CANDIDATE
BASELINE = served_lib.BASELINE
UNTRAINED = served_lib.UNTRAINED
# What restoring a Model can raise: a verdict, not a crash. (An error of the
# module's own code once restored, e.g. in eval_fn, is a failure to fix.)
RESTORE_ERRORS = (checkpoint_restore.CheckpointError, embedding_spec.SpecError,
                  vocabulary_file.VocabularyError, FileNotFoundError,
                  ModelModuleError, ValueError, tf.errors.OpError)


@dataclasses.dataclass(frozen=True)
class Validation:
  """A validation's report, and the row norms of `norms_table` its report
  page plots (candidate and baseline)."""
  report: Dict[str, Any]
  candidate_norms: Optional[np.ndarray] = None
  baseline_norms: Optional[np.ndarray] = None
  norms_table: str = ''


def _context(model_uri: str, examples_uri: str, config: ValidatorConfig,
             module):
  """The module's `ctx`, vocabularies held compactly; one-line errors."""
  ctx = model_restore.context(model_uri, module, [examples_uri],
                              config.max_eval_examples,
                              read_vocabularies=vocabularies_lib.read_compact)
  ctx = dataclasses.replace(ctx, model_uri=model_uri, evaluation=config)
  return ctx, embedding_spec.EmbeddingSpec.load(model_uri)


def _check_rows(model_uri: str, spec, ctx):
  """CheckpointError unless every table has a row per token of its
  vocabulary."""
  for t in spec.tables:
    tokens = len(ctx.vocabulary(t.vocabulary))
    if tokens != t.vocabulary_size:
      raise checkpoint_restore.CheckpointError(
          f'model {model_uri}: vocabulary {t.vocabulary or "(single)"!r} has '
          f'{tokens} tokens but table {t.name!r} has {t.vocabulary_size} rows')


def _score_baseline(module, found, spec, ctx, report) -> served_lib.Served:
  """The baseline's metrics and health (into `report`); its SavedModel
  released, the rows it serves kept."""
  serve = model_views.baseline(found, spec, ctx)
  scores = hooks.evaluate(module, serve, ctx, report['warnings'])
  report['metrics'][BASELINE] = scores
  if scores is not None and serve.not_comparable:
    report['not_comparable'] = dict(serve.not_comparable)
  report['health'][BASELINE] = {
      t.name: metrics.table_health(serve.rows(t.name))
      for t in spec.tables if serve.rows(t.name) is not None}
  serve.clear()  # its signatures: the SavedModel's last references
  found.loaded = None
  tf_allocator.release()
  return serve


def _quality_gates(module, ctx, config, report, refs
                   ) -> List[gates_lib.Gate]:
  """Floors, absolute limits and baseline gates of the candidate's metrics.
  """
  directions = module.metrics
  candidate = report['metrics'][CANDIDATE] or {}
  floors = hooks.floors(module, ctx)
  untrained = (refs.get(UNTRAINED) or {}).get('metrics') or {}
  gates = []
  for metric, names in floors.items():
    for name in names:
      if name not in refs:
        raise ValueError(f'module file {module.path}: floors_fn names '
                         f'reference {name!r}, which is not one of '
                         f'{sorted(refs)}')
      gates.append(gates_lib.floor_gate(
          metric, candidate.get(metric), name, refs[name],
          directions[metric] == 'higher',
          untrained.get(metric) if name != UNTRAINED else None))
  thresholds = config.thresholds()
  gates += gates_lib.absolute_gates(candidate, thresholds, directions)
  unused = sorted(set(thresholds.absolute()) - set(directions))
  if unused:
    report['warnings'].append(f'the model declares no metric {unused}: '
                              'their thresholds do not apply')
  report['warnings'] += report_data.untrained_warnings(report, directions,
                                                       floors)
  if report['metrics'][BASELINE] is not None:
    gates += gates_lib.baseline_gates(
        candidate, report['metrics'][BASELINE], thresholds.regression_margin,
        directions, report.get('not_comparable'))
  return gates


def _untrained(module, restored, ctx, report) -> Dict[str, Any]:
  """The untrained model's reference: the module's eval_fn on the same
  model with freshly initialized variables."""
  with tempfile.TemporaryDirectory(prefix='untrained-') as directory:
    fresh = model_restore.untrained(restored, ctx.seed)
    serve = model_views.candidate(fresh, directory, served_lib.UNTRAINED,
                                  'untrained model')
    scores = hooks.evaluate(module, serve, ctx, report['warnings'])
  return {**hooks.UNTRAINED_REFERENCE, 'metrics': scores or {}}


def _checks(module, restored, serves, ctx, config, report, refs
            ) -> List[gates_lib.Gate]:
  """Health and quality gates of the restored candidate (into `report`)."""
  gates = [gates_lib.restore_gate(None)]
  candidate = serves[CANDIDATE]
  for t in restored.spec.tables:
    health = metrics.table_health(candidate.rows(t.name))
    report['health'][CANDIDATE][t.name] = health
    gates += gates_lib.health_gates(t.name, health, config.thresholds())
  if restored.model is not None:
    gates.append(gates_lib.dense_finite_gate(
        [v.numpy() for v in restored.model.variables]))
  if not module.has_eval:
    report['warnings'].append('the module defines no eval_fn: quality is '
                              'not gated')
    return gates
  report['metrics'][CANDIDATE] = hooks.evaluate(module, candidate, ctx,
                                                  report['warnings'])
  if UNTRAINED not in refs:
    refs[UNTRAINED] = _untrained(module, restored, ctx, report)
    report_data.add_references(report, {UNTRAINED: refs[UNTRAINED]})
  gates += _quality_gates(module, ctx, config, report, refs)
  report_data.add_details(report, hooks.details(module, serves, ctx))
  return gates


def _not_restored(report, error: Exception, base_norms) -> Validation:
  logging.error('CheckpointValidator: %s', error)
  gates = [gates_lib.restore_gate(f'{type(error).__name__}: {error}')]
  return Validation(report_data.finish(report, gates), None, base_norms)


def validate(model_uri: str, examples_uri: str, config: ValidatorConfig,
             module, push_root: str = '') -> Validation:
  """Runs every check of the Model at `model_uri` (its module: `module`)."""
  found, unreadable = baseline_lib.find_baseline(push_root)
  report = report_data.new_report(model_uri, examples_uri, config, push_root,
                                  module, found, unreadable)
  try:
    ctx, spec = _context(model_uri, examples_uri, config, module)
  except RESTORE_ERRORS as e:
    return _not_restored(report, e, None)
  refs = hooks.references(module, ctx)  # reads the eval data: input errors
  report_data.add_references(report, refs)
  serves = {}
  if found is not None:
    serves[BASELINE] = _score_baseline(module, found, spec, ctx, report)
  first = spec.tables[0].name
  base_norms = model_views.norms(serves.get(BASELINE), first)
  directory = tempfile.mkdtemp(prefix='vocabularies-')
  try:
    try:
      restored = model_restore.restore(
          model_uri, module, ctx,
          sparsecore_restore_info=config.sparsecore_restore_info)
      _check_rows(model_uri, spec, ctx)
      serves = {CANDIDATE: model_views.candidate(restored, directory),
                **serves}
      restored.check_matched()
    except RESTORE_ERRORS as e:
      return _not_restored(report, e, base_norms)
    report['restore'] = model_views.restored_variables(restored)
    gates = _checks(module, restored, serves, ctx, config, report, refs)
    report.setdefault('inspection', {}).update(
        model_views.inspect(spec, serves, ctx))
  finally:
    shutil.rmtree(directory, ignore_errors=True)
  return Validation(report_data.finish(report, gates),
                    model_views.norms(serves[CANDIDATE], first), base_norms,
                    first)
