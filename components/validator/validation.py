"""One validation: restore on CPU, measure, gate; returns the report.

1. Restore the candidate's tables with `TPUEmbeddingForServing(optimizer=None)`
   outside any TPU strategy (`tpu_embeddings.artifacts.checkpoint_restore`):
   every spec table must be in the checkpoint with its spec shape. A checkpoint
   that fails this is not blessed; the report gives the error.
2. Health of every table: no NaN/Inf, no collapse, no exploded norms.
3. Quality of the `tokens` table on the eval split (and optional similarity
   and related-pairs files), candidate and pushed baseline scored alike.
4. Gates: held-out loss below the frequency-only model's (and optionally
   recall@k above the popularity ranking's); absolute thresholds; baseline
   within the regression margin.
5. Warnings (not gates): held-out loss not below an untrained table's, a
   baseline that knows little of the evaluation vocabulary.

The baseline is the newest pushed version that can be read; newer ones that
cannot are listed in `baseline_unreadable` (components/validator/baseline.py).

Bad settings or inputs (files, push root, eval data) raise a one-line error;
a bad checkpoint is a verdict, not a crash.
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from components.validator import baseline as baseline_lib
from components.validator import eval_data
from components.validator import gates as gates_lib
from components.validator import inspection
from components.validator import metrics
from components.validator.config import ValidatorConfig
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.core import tf_allocator
from tpu_embeddings.models import skipgram_features
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.spec import embedding_spec


def restored_variables_summary(restored: checkpoint_restore.RestoredModel
                               ) -> Dict[str, Any]:
  """What the restore created vs what the checkpoint holds (slots skipped)."""
  variables = [v for v in tf.train.TrackableView(
      restored.embedding).descendants() if isinstance(v, tf.Variable)]
  restored_bytes = sum(v.shape.num_elements() * v.dtype.size
                       for v in variables)
  reader = tf.train.load_checkpoint(restored.checkpoint_path)
  dtypes = reader.get_variable_to_dtype_map()
  prefix = model_layout.EMBEDDING_KEY + '/'
  in_checkpoint = {
      key: int(np.prod(shape)) * dtypes[key].size
      for key, shape in reader.get_variable_to_shape_map().items()
      if key.startswith(prefix)}
  table_keys = {model_layout.table_key(t.name) for t in restored.spec.tables}
  return {
      'checkpoint': restored.checkpoint_path,
      'restored_variables': [
          {'name': v.name, 'shape': v.shape.as_list(),
           'bytes': v.shape.num_elements() * v.dtype.size} for v in variables],
      'restored_bytes': int(restored_bytes),
      'checkpoint_table_bytes': int(sum(
          b for k, b in in_checkpoint.items() if k in table_keys)),
      'checkpoint_slot_bytes_not_loaded': int(sum(
          b for k, b in in_checkpoint.items() if k not in table_keys)),
  }


@dataclasses.dataclass(frozen=True)
class Validation:
  """A validation's report, and the row norms its report page plots."""
  report: Dict[str, Any]
  candidate_norms: Optional[np.ndarray] = None
  baseline_norms: Optional[np.ndarray] = None


def _new_report(model_uri: str, examples_uri: str, vocabulary_uri: str,
                config: ValidatorConfig, push_root: str,
                skipgram: SkipGramConfig, data: eval_data.EvalData,
                baseline: Optional[baseline_lib.Baseline],
                unreadable: List[baseline_lib.Unreadable]) -> Dict[str, Any]:
  """The report before any check: inputs, parameters, reference metrics."""
  return {
      'current_model': model_uri,
      'baseline_model': baseline.path if baseline else '',
      'baseline_version': baseline.version if baseline else None,
      # Newer pushed versions passed over: they cannot be read.
      'baseline_unreadable': [u.to_dict() for u in unreadable],
      'parameters': {
          'k': config.k, 'window': skipgram.window,
          'num_negatives': skipgram.negatives,
          'subsample': skipgram.subsample,
          'max_eval_examples': config.max_eval_examples,
          'max_recall_queries': config.max_recall_queries,
          'similarity_file': config.similarity_file,
          'related_pairs_file': config.related_pairs_file,
          'analogy_file': config.analogy_file,
          'push_root': push_root,
          'sparsecore_restore_info': config.sparsecore_restore_info,
          'thresholds': dataclasses.asdict(config.thresholds()),
      },
      'eval_data': {
          'examples': examples_uri, 'split': eval_data.EVAL_SPLIT,
          'vocabulary': vocabulary_uri, 'vocabulary_size': len(data.tokens),
          'sequences': data.pairs.sequences,
          'oov_tokens_dropped': data.pairs.oov_tokens,
          'pairs': int(data.pairs.targets.size),
          'recall_queries': int(data.recall_rows.size),
      },
      'metrics': {'candidate': None, 'baseline': None,
                  'popularity': eval_data.popularity(data, config.k),
                  'frequency': eval_data.frequency(data, skipgram),
                  'untrained': {'eval_loss': skipgram.untrained_loss()}},
      'health': {},
      'warnings': [],
  }


def _candidate_gates(restored: checkpoint_restore.RestoredModel,
                     model_tokens: Sequence[str], data: eval_data.EvalData,
                     config: ValidatorConfig, report: Dict[str, Any],
                     baseline: Optional[baseline_lib.Baseline] = None
                     ) -> Tuple[List[gates_lib.Gate], np.ndarray, np.ndarray]:
  """Health, quality and gates of a restored candidate (into `report`);
  (its gates, its input table aligned to the evaluation vocabulary, the
  recall hits of that table)."""
  thresholds = config.thresholds()
  gates = [gates_lib.restore_gate(None)]
  report['health']['candidate'] = {}
  for t in restored.spec.tables:
    health = metrics.table_health(restored.table_numpy(t.name))
    report['health']['candidate'][t.name] = health
    gates += gates_lib.health_gates(t.name, health, thresholds)
  table_name, output_name = skipgram_features.skipgram_tables(restored.spec)
  aligned = metrics.align_table(model_tokens,
                                restored.table_numpy(table_name), data.tokens)
  hits = eval_data.recall_hits(aligned, data, config.k)
  candidate = eval_data.quality(
      data.tokens, aligned, data, config.k,
      metrics.align_table(model_tokens, restored.table_numpy(output_name),
                          data.tokens)
      if output_name != table_name else None, hits)
  why = baseline_lib.loss_not_comparable(baseline, output_name != table_name)
  if why and report['metrics']['baseline']:
    report['metrics']['baseline']['eval_loss'] = None
    report['not_comparable'] = {'eval_loss': why}
  report['metrics']['candidate'] = candidate
  # Tied vectors score a token against itself: their held-out loss stays
  # near an untrained table's even when their neighbours are good, so they
  # must beat the popularity ranking instead.
  two_tables = output_name != table_name
  if thresholds.beat_frequency_model and two_tables:
    gates.append(gates_lib.frequency_gate(
        candidate['eval_loss'], report['metrics']['frequency']['eval_loss'],
        report['metrics']['untrained']['eval_loss']))
  if thresholds.beat_popularity or (thresholds.beat_frequency_model and
                                    not two_tables):
    gates.append(gates_lib.popularity_gate(
        candidate['recall_at_k'],
        report['metrics']['popularity']['recall_at_k']))
  gates += gates_lib.absolute_gates(candidate, thresholds)
  report['warnings'] += _warnings(report, thresholds)
  if report['metrics']['baseline'] is not None:
    gates += gates_lib.baseline_gates(candidate, report['metrics']['baseline'],
                                      thresholds.regression_margin,
                                      report.get('not_comparable'))
  return gates, aligned, hits


def validate(model_uri: str, examples_uri: str, vocabulary_uri: str,
             config: ValidatorConfig, push_root: str = '') -> Validation:
  """Runs every check of the Model at `model_uri`.

  Memory: the baseline's table is aligned to the evaluation vocabulary and
  its own copy released before the candidate is restored; the candidate's
  tables are read in place (no copy), and aligned without a copy when the
  Model's vocabulary is the evaluation vocabulary.
  """
  skipgram = eval_data.trained_skipgram(model_uri)
  data = eval_data.load(examples_uri, vocabulary_uri, config, skipgram)
  baseline, unreadable = baseline_lib.find_baseline(push_root)
  report = _new_report(model_uri, examples_uri, vocabulary_uri, config,
                       push_root, skipgram, data, baseline, unreadable)
  base_norms = base_aligned = None
  hits = {}
  if baseline is not None:
    report['health']['baseline'] = metrics.table_health(baseline.table)
    base_norms = metrics.row_norms(baseline.table)
    base_aligned = metrics.align_table(baseline.tokens, baseline.table,
                                       data.tokens)
    # The baseline's own rows are no longer needed: hold its table once.
    baseline = dataclasses.replace(baseline, tokens=[], table=None)
    tf_allocator.release()
    hits['baseline'] = eval_data.recall_hits(base_aligned, data, config.k)
    report['metrics']['baseline'] = eval_data.quality(
        data.tokens, base_aligned, data, config.k, hits=hits['baseline'])
  try:
    restored = checkpoint_restore.restore_for_serving(
        model_uri, sparsecore_restore_info=config.sparsecore_restore_info,
        read_vocabulary=False)
    model_tokens = eval_data.model_tokens(model_uri, vocabulary_uri, data)
    checkpoint_restore.check_vocabulary_size(model_uri, restored.spec,
                                             len(model_tokens))
  except (checkpoint_restore.CheckpointError, embedding_spec.SpecError,
          vocabulary_file.VocabularyError, FileNotFoundError) as e:
    logging.error('CheckpointValidator: %s', e)
    gates = [gates_lib.restore_gate(f'{type(e).__name__}: {e}')]
    return Validation(finish(report, gates), None, base_norms)
  report['restore'] = restored_variables_summary(restored)
  gates, aligned, hits['candidate'] = _candidate_gates(
      restored, model_tokens, data, config, report, baseline)
  p = data.pairs
  report['inspection'] = inspection.inspect(
      data.tokens, aligned, base_aligned, p.targets[data.recall_rows],
      p.contexts[data.recall_rows], config.k, hits)
  table_name = skipgram_features.skipgram_tables(restored.spec)[0]
  return Validation(finish(report, gates),
                    metrics.row_norms(restored.table_numpy(table_name)),
                    base_norms)


def _warnings(report: Dict[str, Any],
              thresholds: gates_lib.Thresholds) -> List[str]:
  """What the gates do not refuse but a reader should know."""
  out = []
  found = report['metrics']
  loss = found['candidate'].get('eval_loss')
  untrained = found['untrained']['eval_loss']
  if loss is not None and loss >= untrained:
    out.append(f'held-out eval_loss {loss:.5g} is not below an untrained '
               f"table's {untrained:.5g}")
  base = found.get('baseline')
  if base:
    coverage = base.get('eval_vocabulary_coverage') or 0.0
    if coverage < thresholds.min_baseline_coverage:
      out.append(
          f'baseline version {report["baseline_version"]} knows only '
          f'{coverage:.1%} of the evaluation vocabulary (min_baseline_coverage '
          f'{thresholds.min_baseline_coverage:g}): comparing with it says '
          'little')
  return out


def finish(report: Dict[str, Any], gates: List[gates_lib.Gate]
            ) -> Dict[str, Any]:
  report['gates'] = [g.to_dict() for g in gates]
  report['blessed'] = gates_lib.blessed(gates)
  report['summary'] = gates_lib.summary(gates)
  return report
