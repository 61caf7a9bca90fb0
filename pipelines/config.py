"""PipelineConfig: every knob of the pipeline, importable without TFX."""

import dataclasses
import json
import math
from typing import Optional

from components.embedding_spec import EmbeddingSpec, skipgram_spec

PIPELINE_NAME = 'tpu-embeddings'


@dataclasses.dataclass
class PipelineConfig:
  """Every knob of the pipeline, with the demo's defaults."""
  # Data.
  input_pattern: str = 'span-{SPAN}/*'
  span_window: int = 1
  min_count: int = 1
  max_tokens: int = 0
  # Model and training.
  dim: int = 32
  optimizer: str = 'adagrad'
  learning_rate: float = 0.5
  # Adagrad / FTRL only. The batch-mean loss gives small gradients; a small
  # starting accumulator lets the first updates move the rows.
  initial_accumulator_value: float = 1e-3
  batch_size: int = 512
  train_steps: int = 600
  epochs: int = 0  # 0: as many passes as train_steps needs
  window: int = 3
  negatives: int = 5
  subsample: float = 1e-3
  checkpoint_every: int = 200
  tpu: str = ''
  # Warm start from the model behind the latest pushed version (if any and
  # compatible); read when the trainer runs, so Kubeflow needs no Resolver.
  warm_start_from_pushed: bool = True
  seed: int = 0
  # Gates.
  k: int = 10
  regression_margin: float = 0.05
  min_recall_at_k: Optional[float] = None
  # None: the model must beat an untrained one, whose skip-gram loss is
  # (1 + negatives) * ln 2, by 1% (see untrained_loss_limit).
  max_eval_loss: Optional[float] = None
  min_related_recall_at_k: Optional[float] = None
  related_pairs_file: Optional[str] = None
  similarity_file: Optional[str] = None
  # Push.
  keep_versions: int = 5

  def untrained_loss_limit(self) -> float:
    """0.99 x the eval loss of a table that learned nothing (all logits 0)."""
    return 0.99 * (1 + self.negatives) * math.log(2)

  def embedding_spec(self) -> EmbeddingSpec:
    params = {'learning_rate': self.learning_rate}
    if self.optimizer in ('adagrad', 'ftrl'):
      params['initial_accumulator_value'] = self.initial_accumulator_value
    return skipgram_spec(dim=self.dim, optimizer=self.optimizer, **params)

  @classmethod
  def from_json(cls, text: str) -> 'PipelineConfig':
    values = json.loads(text)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
      raise ValueError(f'pipeline config: unknown field {unknown[0]!r}; '
                       f'fields are {sorted(names)}')
    return cls(**values)
