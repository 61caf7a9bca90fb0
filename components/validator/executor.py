"""CheckpointValidator executor: restore on CPU, measure, gate, bless.

1. Restore the candidate's tables with `TPUEmbeddingForServing(optimizer=None)`
   outside any TPU strategy (`components.checkpoint_restore`): every spec
   table must be in the checkpoint with its spec shape. A checkpoint that
   fails this is not blessed; the report gives the error.
2. Health of every table: no NaN/Inf, no collapse, no exploded norms.
3. Quality of the `tokens` table on the eval split (and optional similarity
   and related-pairs files), with the candidate and the pushed baseline
   aligned to the same evaluation vocabulary and scored by the same code.
4. Gates: absolute thresholds; baseline within the regression margin.
5. `ModelBlessing`: `blessed` 1/0, empty BLESSED / NOT_BLESSED file,
   `current_model` / `baseline_model` URIs, report.json and report.html.

Bad parameters or inputs (files, push root, eval data) raise a one-line error;
a bad checkpoint is a verdict, not a crash.
"""

import dataclasses
import itertools
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import numpy as np
import tensorflow as tf
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import checkpoint_restore
from components import embedding_spec
from components import examples_io
from components import model_layout
from components import skipgram
from components import vocabulary_file
from components.validator import baseline as baseline_lib
from components.validator import gates as gates_lib
from components.validator import metrics
from components.validator import report as report_lib

# Input / output keys.
MODEL_KEY = 'model'
EXAMPLES_KEY = 'examples'
VOCABULARY_KEY = 'vocabulary'
BLESSING_KEY = 'blessing'
EVAL_SPLIT = 'eval'

# ModelBlessing conventions (those of TFX's Evaluator).
BLESSED_PROPERTY = 'blessed'
CURRENT_MODEL_PROPERTY = 'current_model'
BASELINE_MODEL_PROPERTY = 'baseline_model'
MESSAGE_PROPERTY = 'blessing_message'
BLESSED_FILE = 'BLESSED'
NOT_BLESSED_FILE = 'NOT_BLESSED'


@dataclasses.dataclass(frozen=True)
class ValidationConfig:
  """Execution parameters, checked. 0 / '' mean "not set"."""
  push_root: str = ''
  k: int = 10
  max_eval_examples: int = 1000
  max_recall_queries: int = 2000
  window: int = 0
  num_negatives: int = 0
  similarity_file: str = ''
  related_pairs_file: str = ''
  sparsecore_restore_info: Optional[Dict[str, Any]] = None
  seed: int = 0
  thresholds: gates_lib.Thresholds = gates_lib.Thresholds()

  def __post_init__(self):
    for name, minimum in (('k', 1), ('max_eval_examples', 1),
                          ('max_recall_queries', 1), ('window', 0),
                          ('num_negatives', 0), ('seed', 0)):
      value = getattr(self, name)
      if isinstance(value, bool) or not isinstance(value, int) or (
          value < minimum):
        raise ValueError(f'validator parameter {name} must be an integer >= '
                         f'{minimum}, got {value!r}')
    info = self.sparsecore_restore_info
    if info is not None:
      for key in ('num_tpu_devices', 'num_sc_chips_per_tpu'):
        if not isinstance(info.get(key), int) or info[key] < 1:
          raise ValueError(
              'validator parameter sparsecore_restore_info needs a positive '
              f'integer {key!r}, got {info.get(key)!r}')

  @classmethod
  def from_exec_properties(cls, props: Dict[str, Any]) -> 'ValidationConfig':
    def get(name, default):
      value = props.get(name)
      return default if value is None else value
    text = get('sparsecore_restore_info', '')
    info = None
    if text:
      try:
        info = json.loads(text)
      except json.JSONDecodeError as e:
        raise ValueError('validator parameter sparsecore_restore_info is not '
                         f'valid JSON: {e}') from e
      if not isinstance(info, dict):
        raise ValueError('validator parameter sparsecore_restore_info must be '
                         'a JSON object such as {"num_tpu_devices": 4, '
                         '"num_sc_chips_per_tpu": 4}')
    fields = {f.name for f in dataclasses.fields(gates_lib.Thresholds)}
    thresholds = gates_lib.Thresholds(**{
        name: props[name] for name in fields if props.get(name) is not None})
    return cls(push_root=get('push_root', ''), k=get('k', cls.k),
               max_eval_examples=get('max_eval_examples',
                                     cls.max_eval_examples),
               max_recall_queries=get('max_recall_queries',
                                      cls.max_recall_queries),
               window=get('window', 0), num_negatives=get('num_negatives', 0),
               similarity_file=get('similarity_file', ''),
               related_pairs_file=get('related_pairs_file', ''),
               sparsecore_restore_info=info,
               seed=get('seed', 0), thresholds=thresholds)


@dataclasses.dataclass
class EvalData:
  """Everything both models are scored on."""
  tokens: List[str]
  ids: Dict[str, int]
  pairs: metrics.EvalPairs
  recall_rows: np.ndarray
  similarity: Optional[List[Tuple[str, str, float]]]
  related: Optional[List[Tuple[str, str]]]


def skipgram_definition(model_uri: str, config: ValidationConfig
                        ) -> Tuple[int, int, float]:
  """(window, negatives, subsample) the model was trained with.

  Parameters win; then the trainer's metadata.json (top level or under
  "skipgram"); then `components.skipgram.SkipGramConfig` defaults.
  """
  meta = {}
  try:
    meta = model_layout.read_metadata(model_uri) or {}
  except (ValueError, tf.errors.OpError):
    pass  # An unreadable metadata file is reported by the restore gate.
  trained = meta.get('skipgram') if isinstance(meta.get('skipgram'),
                                               dict) else meta
  defaults = skipgram.SkipGramConfig()
  window = config.window or trained.get('window') or defaults.window
  negatives = (config.num_negatives or trained.get('negatives') or
               trained.get('num_negatives') or defaults.negatives)
  subsample = trained.get('subsample', defaults.subsample)
  return int(window), int(negatives), float(subsample)


def load_eval_data(examples_uri: str, vocabulary_uri: str,
                   config: ValidationConfig, window: int, num_negatives: int,
                   subsample: float) -> EvalData:
  vocab = vocabulary_file.read(vocabulary_uri)
  similarity = (metrics.read_similarity_file(config.similarity_file)
                if config.similarity_file else None)
  related = (metrics.read_related_pairs(config.related_pairs_file)
             if config.related_pairs_file else None)
  sequences = itertools.islice(
      examples_io.read_sequences(examples_uri, EVAL_SPLIT),
      config.max_eval_examples)
  pairs = metrics.eval_pairs(sequences, vocab.tokens, vocab.counts, window,
                             num_negatives, subsample, seed=config.seed)
  if pairs.targets.size == 0:
    raise ValueError(
        f'examples {examples_uri}: split {EVAL_SPLIT!r} gives no skip-gram '
        f'pairs ({pairs.sequences} sequences read, {pairs.oov_tokens} tokens '
        f'not in the vocabulary {vocabulary_uri}); check the eval data')
  rows = np.arange(pairs.targets.size)
  if rows.size > config.max_recall_queries:
    rng = np.random.default_rng(config.seed + 1)
    rows = np.sort(rng.choice(rows.size, config.max_recall_queries,
                              replace=False))
  return EvalData(list(vocab.tokens), vocab.ids, pairs, rows, similarity,
                  related)


def quality(model_tokens: List[str], table: np.ndarray, data: EvalData,
            k: int) -> Dict[str, Any]:
  """Quality metrics of one model's table on `data` (same code for both)."""
  aligned = metrics.align_table(model_tokens, table, data.tokens)
  p = data.pairs
  out = {
      'eval_loss': metrics.skipgram_loss(aligned, p.targets, p.contexts,
                                         p.negatives),
      'recall_at_k': metrics.recall_at_k(aligned, p.targets[data.recall_rows],
                                         p.contexts[data.recall_rows], k),
      'eval_vocabulary_coverage': float(
          np.mean(metrics.row_norms(aligned) > metrics.ZERO_NORM)),
  }
  if data.similarity is not None:
    sim = metrics.similarity_spearman(aligned, data.ids, data.similarity)
    out['spearman'] = sim['spearman']
    out['similarity_covered_pairs'] = sim['covered_pairs']
  if data.related is not None:
    rel = metrics.related_recall_at_k(aligned, data.ids, data.related, k)
    out['related_recall_at_k'] = rel['recall_at_k']
    out['related_covered_pairs'] = rel['covered_pairs']
  return out


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


def validate(model_uri: str, examples_uri: str, vocabulary_uri: str,
             config: ValidationConfig
             ) -> Tuple[Dict[str, Any], Optional[np.ndarray],
                        Optional[np.ndarray]]:
  """Runs every check; returns (report, candidate norms, baseline norms)."""
  window, num_negatives, subsample = skipgram_definition(model_uri, config)
  data = load_eval_data(examples_uri, vocabulary_uri, config, window,
                        num_negatives, subsample)
  baseline = baseline_lib.load_baseline(config.push_root)
  thresholds = config.thresholds
  report: Dict[str, Any] = {
      'current_model': model_uri,
      'baseline_model': baseline.path if baseline else '',
      'baseline_version': baseline.version if baseline else None,
      'parameters': {
          'k': config.k, 'window': window, 'num_negatives': num_negatives,
          'subsample': subsample,
          'max_eval_examples': config.max_eval_examples,
          'max_recall_queries': config.max_recall_queries,
          'similarity_file': config.similarity_file,
          'related_pairs_file': config.related_pairs_file,
          'push_root': config.push_root,
          'sparsecore_restore_info': config.sparsecore_restore_info,
          'thresholds': dataclasses.asdict(thresholds),
      },
      'eval_data': {
          'examples': examples_uri, 'split': EVAL_SPLIT,
          'vocabulary': vocabulary_uri, 'vocabulary_size': len(data.tokens),
          'sequences': data.pairs.sequences,
          'oov_tokens_dropped': data.pairs.oov_tokens,
          'pairs': int(data.pairs.targets.size),
          'recall_queries': int(data.recall_rows.size),
      },
      'metrics': {'candidate': None, 'baseline': None},
      'health': {},
  }
  base_norms = None
  if baseline is not None:
    report['metrics']['baseline'] = quality(baseline.tokens, baseline.table,
                                            data, config.k)
    report['health']['baseline'] = metrics.table_health(baseline.table)
    base_norms = metrics.row_norms(baseline.table)

  try:
    restored = checkpoint_restore.restore_for_serving(
        model_uri, sparsecore_restore_info=config.sparsecore_restore_info)
  except (checkpoint_restore.CheckpointError, embedding_spec.SpecError,
          vocabulary_file.VocabularyError, FileNotFoundError) as e:
    logging.error('CheckpointValidator: %s', e)
    gates = [gates_lib.restore_gate(f'{type(e).__name__}: {e}')]
    return _finish(report, gates), None, base_norms

  report['restore'] = restored_variables_summary(restored)
  gates = [gates_lib.restore_gate(None)]
  candidate_health = {}
  for t in restored.spec.tables:
    candidate_health[t.name] = metrics.table_health(restored.table_numpy(t.name))
    gates += gates_lib.health_gates(t.name, candidate_health[t.name],
                                    thresholds)
  report['health']['candidate'] = candidate_health
  table_name = embedding_spec.TOKENS_TABLE
  if table_name not in {t.name for t in restored.spec.tables}:
    raise ValueError(f'model {model_uri}: spec has no {table_name!r} table; '
                     'the validator scores skip-gram models')
  table = restored.table_numpy(table_name)
  candidate = quality(list(restored.vocabulary.tokens), table, data, config.k)
  report['metrics']['candidate'] = candidate
  gates += gates_lib.absolute_gates(candidate, thresholds)
  if baseline is not None:
    gates += gates_lib.baseline_gates(candidate, report['metrics']['baseline'],
                                      thresholds.regression_margin)
  return _finish(report, gates), metrics.row_norms(table), base_norms


def _finish(report: Dict[str, Any], gates: List[gates_lib.Gate]
            ) -> Dict[str, Any]:
  report['gates'] = [g.to_dict() for g in gates]
  report['blessed'] = gates_lib.blessed(gates)
  report['summary'] = gates_lib.summary(gates)
  return report


def write_blessing(blessing: types.Artifact, report: Dict[str, Any],
                   candidate_norms: Optional[np.ndarray],
                   baseline_norms: Optional[np.ndarray]):
  """Report files first, the BLESSED / NOT_BLESSED marker last."""
  uri = blessing.uri
  written = []
  try:
    written += report_lib.write(uri, report, candidate_norms, baseline_norms)
    marker = os.path.join(uri, BLESSED_FILE if report['blessed'] else
                          NOT_BLESSED_FILE)
    with tf.io.gfile.GFile(marker, 'w') as f:
      f.write('')
  except Exception:
    for path in written:
      if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)
    raise
  blessing.set_int_custom_property(BLESSED_PROPERTY,
                                   1 if report['blessed'] else 0)
  blessing.set_string_custom_property(CURRENT_MODEL_PROPERTY,
                                      report['current_model'])
  blessing.set_string_custom_property(BASELINE_MODEL_PROPERTY,
                                      report['baseline_model'])
  blessing.set_string_custom_property(MESSAGE_PROPERTY, report['summary'])


class Executor(base_executor.BaseExecutor):
  """Validates the trainer's Model and writes a ModelBlessing."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    self._log_startup(input_dict, output_dict, exec_properties)
    config = ValidationConfig.from_exec_properties(exec_properties)
    model = artifact_utils.get_single_instance(input_dict[MODEL_KEY])
    examples = artifact_utils.get_single_instance(input_dict[EXAMPLES_KEY])
    vocabulary = artifact_utils.get_single_instance(input_dict[VOCABULARY_KEY])
    blessing = artifact_utils.get_single_instance(output_dict[BLESSING_KEY])
    report, candidate_norms, baseline_norms = validate(
        model.uri, examples.uri, vocabulary.uri, config)
    write_blessing(blessing, report, candidate_norms, baseline_norms)
    logging.info('CheckpointValidator: %s (%s)', report['summary'],
                 blessing.uri)
