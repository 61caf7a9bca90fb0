"""SkipGramConfig: how token sequences become skip-gram training pairs."""

import dataclasses
import math

from tpu_embeddings.core import settings

# Eval sequences the held-out sample reads by default (the validator's
# max_eval_examples; the trainer's TensorBoard eval loss reads as many).
EVAL_SEQUENCES = 1000


@dataclasses.dataclass(frozen=True)
class SkipGramConfig(settings.Settings):
  """How sequences become training batches.

  Attributes:
    batch_size: (target, context) pairs per global batch.
    window: maximum distance between target and context; each target draws
      its own window size uniformly from 1..window (word2vec).
    negatives: negatives per pair, K.
    shared_negatives: 0: each pair draws its own K negatives. S > 0: each
      group of `negative_group` consecutive pairs of a batch shares S
      negatives, every pair scoring all S with weight K/S (the loss keeps
      the scale of K per pair). Fewer rows drawn, read and updated per pair:
      a faster step, on CPU and TPU alike.
    negative_group: pairs per group sharing negatives; the batch (and on a
      TPU each replica's share of it) must hold whole groups.
    subsample: word2vec's sample threshold t; a token with corpus frequency f
      is kept with probability min(1, (sqrt(f/t) + 1) * t/f). 0 keeps all.
    seed: seed of every random choice (initial values, input pipeline).
    sequences_per_chunk: sequences turned into pairs together; the pairs of
      a chunk are shuffled before batching.
    shuffle_buffer: sequences in the shuffle buffer (per epoch).
  """
  WHAT = 'skip-gram'

  batch_size: int = 2048
  window: int = 5
  negatives: int = 5
  shared_negatives: int = 0
  negative_group: int = 64
  subsample: float = 1e-3
  seed: int = 0
  sequences_per_chunk: int = 256
  shuffle_buffer: int = 10_000

  def validate(self):
    super().validate()
    for name in ('batch_size', 'window', 'negatives', 'negative_group',
                 'sequences_per_chunk', 'shuffle_buffer'):
      self.check_int(name, 1)
    self.check_int('shared_negatives', 0)
    if self.shared_negatives and self.batch_size % self.negative_group:
      raise ValueError(
          f'{self.WHAT} parameter batch_size ({self.batch_size}) must be a '
          f'multiple of negative_group ({self.negative_group}) when '
          'shared_negatives is set')
    self.check_int('seed', 0)
    if not 0 <= self.subsample < 1:
      raise ValueError(f'{self.WHAT} parameter subsample must be in [0, 1), '
                       f'got {self.subsample!r}')

  @property
  def negative_groups(self) -> int:
    """Rows of a batch's negatives: one per pair, or one per group."""
    if self.shared_negatives:
      return self.batch_size // self.negative_group
    return self.batch_size

  @property
  def negatives_per_row(self) -> int:
    """Columns of a batch's negatives: K per pair, or S per group."""
    return self.shared_negatives or self.negatives

  @property
  def negative_weight(self) -> float:
    """The weight of each negative's loss term: K/S when shared, else 1."""
    return self.negatives / self.negatives_per_row

  def untrained_loss(self) -> float:
    """Skip-gram loss of a table that learned nothing (every logit 0)."""
    return (1 + self.negatives) * math.log(2)
