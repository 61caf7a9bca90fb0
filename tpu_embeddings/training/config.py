"""TrainerConfig and TableConfig (skipgram_table.py): every setting of
EmbeddingTrainer.

Importable without TensorFlow or TFX, so command lines check settings before
the heavy imports.
"""

import dataclasses
from typing import Any, Dict

from tpu_embeddings.core import settings
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.models.skipgram_table import TableConfig
from tpu_embeddings.models.skipgram_table import default_spec
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

# TableConfig is defined beside skip-gram's spec, which reads its defaults.
__all__ = ['LoopConfig', 'TableConfig', 'TrainerConfig']

# Bounds shared by several settings (see settings.bounded).
STEPS = 10**9
DAY = 86_400.0


@dataclasses.dataclass(frozen=True)
class LoopConfig(settings.Settings):
  """How long to train and how often to log and checkpoint.

  Attributes:
    train_steps: total steps, the data repeating as often as needed; when
      set, `epochs` is ignored. 0: train `epochs` passes.
    epochs: passes over the data, as gensim's `epochs` (the default, 5,
      learns on corpora from 50k tokens up; see docs/defaults.md).
    checkpoint_every: steps between checkpoints (a rerun resumes from the
      latest one); 0 = none by step count.
    checkpoint_seconds: a checkpoint once this many seconds have passed since
      the last one (checked after every `log_every` steps); 0 = none by time.
      A save of a large table and its slots costs far more than a step, so
      the default bounds the work a kill loses by time, not by steps.
    log_every: steps between progress lines.
    summary_every: steps between TensorBoard `loss` points (each the mean of
      those steps' batch losses, read back once per `log_every` call, so a
      point costs no extra device round trip).
    learning_rate_decay: the learning rate falls linearly over the run, to
      word2vec's final fraction at its last step (`train_steps`, or the
      expected steps of `epochs`); false keeps it constant.
  """
  WHAT = 'training loop'

  # A billion steps is months even at a thousand steps a second.
  train_steps: int = settings.bounded(0, 0, STEPS)
  # gensim's default is 5; small corpora take 20-100 passes.
  epochs: int = settings.bounded(5, 0, 1000)
  checkpoint_every: int = settings.bounded(0, 0, STEPS)
  # Beyond a day between checkpoints a kill loses more than a day's work.
  checkpoint_seconds: float = settings.bounded(120.0, 0.0, DAY)
  # Progress lines (and the time check of checkpoint_seconds) come every
  # log_every steps: at most 100,000 keeps a line within minutes on any
  # device.
  log_every: int = settings.bounded(100, 1, 100_000)
  summary_every: int = settings.bounded(10, 1, 100_000)
  learning_rate_decay: bool = True

  def validate(self):
    super().validate()
    if self.checkpoint_every == 0 and self.checkpoint_seconds == 0:
      raise ValueError(f'{self.WHAT}: set checkpoint_every or '
                       'checkpoint_seconds (both are 0: a kill would lose the '
                       'whole run)')
    if self.train_steps == 0 and self.epochs == 0:
      raise ValueError(f'{self.WHAT}: set train_steps or epochs (both are 0: '
                       'training would never end)')

  @property
  def passes(self) -> int:
    """Passes over the data the input pipeline makes (0: it repeats)."""
    return 0 if self.train_steps else self.epochs


@dataclasses.dataclass(frozen=True)
class TrainerConfig(SkipGramConfig, LoopConfig):
  """Settings of EmbeddingTrainer: skip-gram data, training loop, device.

  Attributes:
    embedding_spec: the `EmbeddingSpec` JSON; '' is the default table's
      (`TableConfig()`, the CLI's `table.*` defaults). A table
      vocabulary_size of 0 is set from the vocabulary.
    tpu: '' for CPU, 'auto' for a TPU when the environment names one, or a
      TPU name / grpc:// address (unreachable = error, never CPU).
    warm_start_uri: an earlier Model to warm-start from (tables and slots;
      rows remapped by token when the vocabulary changed).
    warm_start_from_pushed: without a base model, warm start from the model
      behind the push root's latest version (read when the trainer runs; no
      pushed version or an incompatible spec means a logged cold start).
    projector_tokens: rows of the table (the most frequent tokens) written
      for the TensorBoard projector next to the run's scalars; 0 = none.
    custom_config: free-form settings of a module file (`ctx.custom_config`,
      as TFX Trainer's `custom_config`).
  """
  WHAT = 'EmbeddingTrainer'

  embedding_spec: str = ''
  tpu: str = ''
  warm_start_uri: str = ''
  warm_start_from_pushed: bool = True
  # The projector shows at most 100,000 points (it samples beyond that);
  # the rows are written beside the run's scalars.
  projector_tokens: int = settings.bounded(10_000, 0, 100_000)
  custom_config: Dict[str, Any] = dataclasses.field(default_factory=dict)

  def validate(self):
    super().validate()
    if self.embedding_spec.strip():
      EmbeddingSpec.from_json(self.embedding_spec)

  def spec(self) -> EmbeddingSpec:
    if self.embedding_spec.strip():
      return EmbeddingSpec.from_json(self.embedding_spec)
    return default_spec()
