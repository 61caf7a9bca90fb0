"""CheckpointValidator: the TFX component that blesses a trained embedding.

    validator = CheckpointValidator(
        model=trainer.outputs['model'],
        examples=example_gen.outputs['examples'],
        vocabulary=vocabulary_gen.outputs['vocabulary'],
        push_root='gs://bucket/embeddings',   # baseline: the version pushed
        min_recall_at_k=0.05,
        related_pairs_file='gs://bucket/data/related_pairs.tsv')
    pusher = EmbeddingPusher(..., model_blessing=validator.outputs['blessing'])

The baseline is the latest complete version under `<push_root>/serving/`
(no resolver node: open-source Kubeflow Pipelines cannot run one). Without a
baseline only the health gates and absolute thresholds apply.
"""

import json
from typing import Any, Dict, Optional, Union

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import component_spec
from tfx.types import standard_artifacts

from components import artifact_types
from components.validator import executor
from components.validator import gates


class CheckpointValidatorSpec(types.ComponentSpec):
  """Inputs, parameters and output of CheckpointValidator."""
  PARAMETERS = {
      'push_root': component_spec.ExecutionParameter(type=str, optional=True),
      'k': component_spec.ExecutionParameter(type=int, optional=True),
      'max_eval_examples': component_spec.ExecutionParameter(
          type=int, optional=True),
      'max_recall_queries': component_spec.ExecutionParameter(
          type=int, optional=True),
      'window': component_spec.ExecutionParameter(type=int, optional=True),
      'num_negatives': component_spec.ExecutionParameter(
          type=int, optional=True),
      'similarity_file': component_spec.ExecutionParameter(
          type=str, optional=True),
      'related_pairs_file': component_spec.ExecutionParameter(
          type=str, optional=True),
      'sparsecore_restore_info': component_spec.ExecutionParameter(
          type=str, optional=True),
      'seed': component_spec.ExecutionParameter(type=int, optional=True),
      'max_mean_cosine': component_spec.ExecutionParameter(
          type=float, optional=True),
      'max_row_norm': component_spec.ExecutionParameter(
          type=float, optional=True),
      'max_eval_loss': component_spec.ExecutionParameter(
          type=float, optional=True),
      'min_recall_at_k': component_spec.ExecutionParameter(
          type=float, optional=True),
      'min_spearman': component_spec.ExecutionParameter(
          type=float, optional=True),
      'min_related_recall_at_k': component_spec.ExecutionParameter(
          type=float, optional=True),
      'regression_margin': component_spec.ExecutionParameter(
          type=float, optional=True),
  }
  INPUTS = {
      executor.MODEL_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Model),
      executor.EXAMPLES_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.Examples),
      executor.VOCABULARY_KEY: component_spec.ChannelParameter(
          type=artifact_types.Vocabulary),
  }
  OUTPUTS = {
      executor.BLESSING_KEY: component_spec.ChannelParameter(
          type=standard_artifacts.ModelBlessing),
  }


class CheckpointValidator(base_component.BaseComponent):
  """Restores the trained tables on CPU, checks them and blesses or not.

  Outputs `blessing` (ModelBlessing): custom properties `blessed` (1/0),
  `current_model`, `baseline_model` ('' when none) and `blessing_message`; an
  empty `BLESSED` or `NOT_BLESSED` file, `report.json` and `report.html`.
  """

  SPEC_CLASS = CheckpointValidatorSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self,
               model: types.BaseChannel,
               examples: types.BaseChannel,
               vocabulary: types.BaseChannel,
               push_root: Optional[str] = None,
               k: int = 10,
               max_eval_examples: int = 1000,
               max_recall_queries: int = 2000,
               window: Optional[int] = None,
               num_negatives: Optional[int] = None,
               similarity_file: Optional[str] = None,
               related_pairs_file: Optional[str] = None,
               sparsecore_restore_info: Optional[Union[str, Dict[str,
                                                                 Any]]] = None,
               seed: int = 0,
               max_mean_cosine: float = gates.Thresholds.max_mean_cosine,
               max_row_norm: float = gates.Thresholds.max_row_norm,
               max_eval_loss: Optional[float] = None,
               min_recall_at_k: Optional[float] = None,
               min_spearman: Optional[float] = None,
               min_related_recall_at_k: Optional[float] = None,
               regression_margin: float = gates.Thresholds.regression_margin):
    """Builds the component; parameters are checked here, before any run.

    Args:
      model: trainer `Model` (checkpoint + embedding_spec.json + vocabulary).
      examples: `Examples` with an `eval` split.
      vocabulary: vocabulary artifact of the data; the evaluation vocabulary.
      push_root: the pusher's destination; its latest complete serving
        version is the baseline. Empty: absolute thresholds only.
      k: neighbours for recall@k.
      max_eval_examples: eval sequences read.
      max_recall_queries: (target, context) pairs ranked for recall@k.
      window: skip-gram window; default the trainer's (metadata.json).
      num_negatives: negatives per pair; default the trainer's.
      similarity_file: optional WordSim-353 style "w1<TAB>w2<TAB>score" file.
      related_pairs_file: optional "tokenA<TAB>tokenB" file.
      sparsecore_restore_info: for SparseCore checkpoints, e.g.
        {"num_tpu_devices": 4, "num_sc_chips_per_tpu": 4} (dict or JSON).
      seed: seed of the shared negative draw and recall sample.
      max_mean_cosine: collapse threshold on the mean pairwise row cosine.
      max_row_norm: exploded-norm threshold on any row's L2 norm.
      max_eval_loss, min_recall_at_k, min_spearman, min_related_recall_at_k:
        absolute quality thresholds (None: not gated).
      regression_margin: fraction of the baseline's value the candidate may
        lose on any quality metric.
    """
    if isinstance(sparsecore_restore_info, dict):
      sparsecore_restore_info = json.dumps(sparsecore_restore_info,
                                           sort_keys=True)
    floats = dict(max_mean_cosine=max_mean_cosine, max_row_norm=max_row_norm,
                  max_eval_loss=max_eval_loss, min_recall_at_k=min_recall_at_k,
                  min_spearman=min_spearman,
                  min_related_recall_at_k=min_related_recall_at_k,
                  regression_margin=regression_margin)
    params = dict(
        push_root=push_root or '', k=k, max_eval_examples=max_eval_examples,
        max_recall_queries=max_recall_queries, window=window,
        num_negatives=num_negatives, similarity_file=similarity_file,
        related_pairs_file=related_pairs_file,
        sparsecore_restore_info=sparsecore_restore_info, seed=seed,
        **{name: (float(value) if isinstance(value, int) and
                  not isinstance(value, bool) else value)
           for name, value in floats.items()})
    # Fail at pipeline construction, not an hour into a run.
    executor.ValidationConfig.from_exec_properties(params)
    spec = CheckpointValidatorSpec(
        model=model, examples=examples, vocabulary=vocabulary,
        blessing=types.Channel(type=standard_artifacts.ModelBlessing),
        **{name: value for name, value in params.items() if value is not None})
    super().__init__(spec=spec)
