"""Tests of tpu_embeddings/models/frequency_model.py."""

import math

import numpy as np
import pytest

from tpu_embeddings.models import frequency_model
from tpu_embeddings.models import skipgram
from tpu_embeddings.models import skipgram_negatives

COUNTS = [5000, 1200, 600, 300, 80, 20, 5]
K = 5


def _pairs(rng, n, subsample):
  """Held-out pairs whose contexts follow the kept-count distribution and
  negatives the trainer's unigram^0.75 one."""
  counts = np.asarray(COUNTS, np.float64)
  kept = counts * skipgram.keep_probabilities(counts, subsample)
  contexts = rng.choice(len(COUNTS), size=n, p=kept / kept.sum())
  negatives = rng.choice(len(COUNTS), size=(n, K),
                         p=skipgram_negatives.negative_sampling_probabilities(counts))
  return contexts, negatives


def _loss(b, contexts, negatives):
  return (np.logaddexp(0, -b[contexts]).sum()
          + np.logaddexp(0, b[negatives]).sum()) / contexts.size


@pytest.mark.parametrize('subsample', [0.0, 1e-3])
def test_no_other_per_token_logits_do_better(subsample):
  rng = np.random.default_rng(0)
  contexts, negatives = _pairs(rng, 200_000, subsample)
  b = frequency_model.logits(COUNTS, K, subsample)
  best = frequency_model.heldout_loss(COUNTS, contexts, negatives, subsample)
  assert best == pytest.approx(_loss(b, contexts, negatives))
  for _ in range(20):
    nudged = b + rng.normal(scale=0.3, size=b.shape)
    assert _loss(nudged, contexts, negatives) > best
  constant = np.full_like(b, np.log(1.0 / K))
  assert _loss(constant, contexts, negatives) > best


def test_an_untrained_table_scores_above_it():
  rng = np.random.default_rng(1)
  contexts, negatives = _pairs(rng, 10_000, 1e-3)
  loss = frequency_model.heldout_loss(COUNTS, contexts, negatives, 1e-3)
  assert loss < (1 + K) * math.log(2)


def test_no_pairs_has_no_loss():
  empty = np.zeros([0], np.int64)
  assert frequency_model.heldout_loss(
      COUNTS, empty, np.zeros([0, K], np.int64), 0.0) is None
