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
  subsample: float = 1e-3
  seed: int = 0
  sequences_per_chunk: int = 256
  shuffle_buffer: int = 10_000

  def validate(self):
    super().validate()
    for name in ('batch_size', 'window', 'negatives', 'sequences_per_chunk',
                 'shuffle_buffer'):
      self.check_int(name, 1)
    self.check_int('seed', 0)
    if not 0 <= self.subsample < 1:
      raise ValueError(f'{self.WHAT} parameter subsample must be in [0, 1), '
                       f'got {self.subsample!r}')

  def untrained_loss(self) -> float:
    """Skip-gram loss of a table that learned nothing (every logit 0)."""
    return (1 + self.negatives) * math.log(2)
