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

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import component_spec
from tfx.types import standard_artifacts

from components import artifact_types
from components import keys
from components.validator import executor
from tpu_embeddings.core import settings
from tpu_embeddings.validation.config import ValidatorConfig


class CheckpointValidatorSpec(types.ComponentSpec):
  """Inputs, parameters and output of CheckpointValidator."""
  PARAMETERS = {
      settings.CONFIG_KEY: component_spec.ExecutionParameter(type=str),
      keys.PUSH_ROOT: component_spec.ExecutionParameter(
          type=str, optional=True),
      keys.SERVED_BASELINE: component_spec.ExecutionParameter(
          type=str, optional=True),
  }
  INPUTS = {
      keys.MODEL: component_spec.ChannelParameter(
          type=standard_artifacts.Model),
      keys.EXAMPLES: component_spec.ChannelParameter(
          type=standard_artifacts.Examples),
      keys.VOCABULARY: component_spec.ChannelParameter(
          type=artifact_types.Vocabulary),
  }
  OUTPUTS = {
      keys.BLESSING: component_spec.ChannelParameter(
          type=standard_artifacts.ModelBlessing),
  }


class CheckpointValidator(base_component.BaseComponent):
  """Restores the trained tables on CPU, checks them and blesses or not.

  Outputs `blessing` (ModelBlessing): custom properties `blessed` (1/0),
  `current_model` and `current_model_id` (the `model` input's URI and id, as
  stock Evaluator sets them), `baseline_model` ('' when none) and
  `blessing_message`; an
  empty `BLESSED` or `NOT_BLESSED` file, `report.json` and `report.html`.
  Every model is validated by `tpu_embeddings.validation.validate`, scored
  by what its module declares (METRICS, eval_fn and the optional hooks;
  skip-gram's are in tpu_embeddings/models/skipgram_eval.py).

  Args:
    model: trainer `Model` (checkpoint + embedding_spec.json + vocabulary).
    examples: `Examples` with an `eval` split.
    vocabulary: vocabulary artifact of the data; the Model carries its copy
      (the evaluation vocabulary), the report names this one.
    push_root: the pusher's destination; its latest complete serving
      version is the baseline. Empty: absolute thresholds only.
    served_baseline: what the push root serves when the pipeline is built
      (`tpu_embeddings.push_root.served.key`); only part of the cache key,
      so a verdict is reused only while the same version is served. The
      report records the served version it was validated against, which
      the pusher checks again.
    config: a `ValidatorConfig`; `**settings` override its fields by name.
  """

  SPEC_CLASS = CheckpointValidatorSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self,
               model: types.BaseChannel,
               examples: types.BaseChannel,
               vocabulary: types.BaseChannel,
               push_root: Optional[str] = None,
               config: Optional[ValidatorConfig] = None,
               served_baseline: str = '',
               **settings_by_name):
    # Checked here: bad settings fail at pipeline construction.
    config = (config or ValidatorConfig()).replace(**settings_by_name)
    super().__init__(spec=CheckpointValidatorSpec(
        model=model, examples=examples, vocabulary=vocabulary,
        config=config.to_json(), push_root=push_root or '',
        served_baseline=served_baseline,
        blessing=types.Channel(type=standard_artifacts.ModelBlessing)))
