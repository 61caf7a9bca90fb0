"""The best skip-gram model that knows token counts and nothing else.

It scores a candidate context `x` with one number per token, whatever the
target: the logit that minimizes the negative-sampling loss when contexts
follow the training pairs' context distribution and negatives the trainer's
unigram^0.75 one, b_x = log(p_context(x) / (K * p_negative(x))). Its
held-out loss is what a table must beat to have learned anything about
which tokens go together: an untrained table (every logit 0) scores
(1 + K) ln 2, above it; a collapsed table gives every pair the same score, at
best a constant logit, never below it; on held-out text a word2vec table
that learned co-occurrence is below it.

p_context(x) is proportional to count(x) * keep(x), the expected number of
kept occurrences of `x` after subsampling (every kept token is a context of
its kept neighbours), both from the training vocabulary.
"""

import math
from typing import Optional, Sequence

import numpy as np

from tpu_embeddings.models import skipgram
from tpu_embeddings.models import skipgram_negatives


def logits(counts: Sequence[int], negatives: int,
           subsample: float) -> np.ndarray:
  """Per-token logit b_x of the frequency-only model (float64)."""
  counts = np.asarray(counts, dtype=np.float64)
  kept = counts * skipgram.keep_probabilities(counts, subsample)
  p_context = kept / max(kept.sum(), 1e-300)
  p_negative = skipgram_negatives.negative_sampling_probabilities(counts)
  with np.errstate(divide='ignore'):
    return np.log(p_context) - np.log(negatives * p_negative)


def _softplus(x: np.ndarray) -> np.ndarray:
  return np.logaddexp(0.0, x)


def heldout_loss(counts: Sequence[int], contexts: np.ndarray,
                 negatives: np.ndarray, subsample: float) -> Optional[float]:
  """Mean skip-gram loss per pair of the frequency-only model.

  `contexts` [P] and `negatives` [P, K] are vocabulary ids of held-out pairs,
  as the trainer's loss sees them; None when there are none.
  """
  if contexts.size == 0:
    return None
  b = logits(counts, negatives.shape[1], subsample)
  loss = (float(np.sum(_softplus(-b[contexts])))
          + float(np.sum(_softplus(b[negatives]))))
  loss /= contexts.size
  return loss if math.isfinite(loss) else None
