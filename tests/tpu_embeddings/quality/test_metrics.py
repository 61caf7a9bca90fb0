"""Tests of tpu_embeddings/quality/metrics.py against brute-force
definitions."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from tpu_embeddings.models import heldout
from tpu_embeddings.models import skipgram_negatives
from tpu_embeddings.quality import metrics


def _brute_mean_cosine(table):
  rows = [r / np.linalg.norm(r) for r in table.astype(np.float64)
          if np.all(np.isfinite(r)) and np.linalg.norm(r) > 0]
  sims = [a @ b for a, b in itertools.permutations(rows, 2)]
  return float(np.mean(sims))


def test_mean_pairwise_cosine_matches_all_pairs():
  rng = np.random.default_rng(1)
  table = rng.normal(size=(30, 6)).astype(np.float32) + 0.3
  table[4] = 0.0
  table[7, 2] = np.nan
  assert metrics.mean_pairwise_cosine(table) == pytest.approx(
      _brute_mean_cosine(table), abs=1e-9)


def test_initial_distribution_is_healthy_and_identical_rows_are_collapsed():
  rng = np.random.default_rng(2)
  dim = 16
  initial = rng.uniform(-0.5 / dim, 0.5 / dim, size=(500, dim))
  assert abs(metrics.mean_pairwise_cosine(initial)) < 0.05
  collapsed = np.tile(rng.normal(size=(1, dim)), (500, 1))
  collapsed += rng.normal(scale=1e-3, size=collapsed.shape)
  assert metrics.mean_pairwise_cosine(collapsed) > 0.99
  assert metrics.mean_pairwise_cosine(np.zeros((5, dim))) is None


def test_table_health_counts_nonfinite_and_zero_rows():
  table = np.ones((10, 4), np.float32)
  table[2, 1] = np.nan
  table[3] = np.inf
  table[5] = 0.0
  table[6] = 10.0
  h = metrics.table_health(table)
  assert h['nonfinite_values'] == 5
  assert h['nonfinite_rows'] == 2
  assert h['zero_rows'] == 1
  assert h['max_norm'] == pytest.approx(20.0)
  assert h['rows'] == 10 and h['dim'] == 4


def test_align_table_reorders_and_zeroes_unknown_tokens():
  table = np.arange(6, dtype=np.float32).reshape(3, 2)
  out = metrics.align_table(['a', 'b', 'c'], table, ['c', 'x', 'a'])
  np.testing.assert_array_equal(out, [[4, 5], [0, 0], [0, 1]])
  with pytest.raises(ValueError, match='2 tokens but the table has 3 rows'):
    metrics.align_table(['a', 'b'], table, ['a'])


def test_eval_pairs_drop_oov_before_windows_and_repeat_exactly():
  tokens, counts = ['a', 'b', 'c', 'd'], [4, 3, 2, 1]
  seqs = [['a', 'zzz', 'b', 'c'], ['d']]
  p = heldout.eval_pairs(seqs, tokens, counts, window=1, num_negatives=3,
                         subsample=0.0, seed=7)
  # Window 1 has no randomness: OOV removed first, so a and b are neighbours.
  assert sorted(zip(p.targets.tolist(), p.contexts.tolist())) == [
      (0, 1), (1, 0), (1, 2), (2, 1)]
  assert p.negatives.shape == (4, 3)
  assert p.negatives.min() >= 0 and p.negatives.max() < 4
  assert p.sequences == 2 and p.oov_tokens == 1
  again = heldout.eval_pairs(seqs, tokens, counts, 1, 3, 0.0, seed=7)
  np.testing.assert_array_equal(p.negatives, again.negatives)
  with pytest.raises(ValueError, match='window must be an integer >= 1'):
    heldout.eval_pairs(seqs, tokens, counts, 0, 3, 0.0)


def test_eval_pairs_stay_within_the_window():
  tokens = [f't{i}' for i in range(50)]
  seq = [tokens[i % 50] for i in range(200)]
  p = heldout.eval_pairs([seq], tokens, [1] * 50, window=3, num_negatives=2,
                         subsample=0.0)
  distance = np.abs(p.targets - p.contexts) % 50
  assert p.targets.size > 200
  assert np.all(np.minimum(distance, 50 - distance) <= 3)
  assert np.all(distance > 0)


def test_skipgram_loss_is_the_per_pair_negative_sampling_loss():
  rng = np.random.default_rng(3)
  table = rng.normal(scale=0.7, size=(12, 5)).astype(np.float32)
  t = rng.integers(0, 12, 40)
  c = rng.integers(0, 12, 40)
  n = rng.integers(0, 12, (40, 4))
  softplus = lambda x: math.log1p(math.exp(x))
  expected = np.mean([
      softplus(-float(table[t[i]] @ table[c[i]])) +
      sum(softplus(float(table[t[i]] @ table[j])) for j in n[i])
      for i in range(40)])
  assert heldout.skipgram_loss(table, t, c, n) == pytest.approx(expected,
                                                                rel=1e-5)
  table[t[0], 0] = np.nan
  assert heldout.skipgram_loss(table, t, c, n) is None


def _brute_recall(table, queries, answers, k):
  unit = table / np.linalg.norm(table, axis=1, keepdims=True)
  hits = total = 0
  for q, a in zip(queries, answers):
    if q == a:
      continue
    total += 1
    scores = unit @ unit[q]
    order = [i for i in np.argsort(-scores, kind='stable') if i != q]
    hits += a in order[:k]
  return hits / total


def test_recall_at_k_matches_a_full_ranking():
  rng = np.random.default_rng(4)
  table = rng.normal(size=(60, 8)).astype(np.float32)
  queries = rng.integers(0, 60, 300)
  answers = rng.integers(0, 60, 300)
  for k in (1, 5, 20):
    assert metrics.recall_at_k(table, queries, answers, k) == pytest.approx(
        _brute_recall(table, queries, answers, k))


def test_popularity_recall_ranks_the_most_frequent_other_tokens():
  rng = np.random.default_rng(6)
  queries = rng.integers(0, 40, 500)
  answers = rng.integers(0, 40, 500)
  for k in (1, 3, 10):
    hits = [a in [i for i in range(40) if i != q][:k]
            for q, a in zip(queries, answers) if q != a]
    assert metrics.popularity_recall_at_k(queries, answers, k) == (
        pytest.approx(np.mean(hits)))
  assert metrics.popularity_recall_at_k(queries, queries, 3) is None


def test_recall_at_k_gives_nothing_to_constant_or_unknown_rows():
  constant = np.ones((20, 4), np.float32)
  q, a = np.arange(10), np.arange(10, 20)
  assert metrics.recall_at_k(constant, q, a, 5) == 0.0
  table = np.random.default_rng(5).normal(size=(20, 4)).astype(np.float32)
  table[:10] = 0.0  # the queries are unknown tokens of an aligned table
  assert metrics.recall_at_k(table, q, a, 19) == 0.0
  assert metrics.recall_at_k(table, q, q, 5) is None
  with pytest.raises(ValueError, match='k must be >= 1'):
    metrics.recall_at_k(table, q, a, 0)


def test_spearman_matches_scipy_with_ties():
  rng = np.random.default_rng(6)
  x = rng.integers(0, 5, 40).astype(float)
  y = x + rng.integers(0, 4, 40)
  assert metrics.spearman(x, y) == pytest.approx(
      stats.spearmanr(x, y).correlation)
  assert metrics.spearman([1, 1, 1], [1, 2, 3]) is None
  assert metrics.spearman([1], [2]) is None


def test_similarity_and_related_scores_use_covered_pairs_only():
  ids = {'a': 0, 'b': 1, 'c': 2, 'd': 3}
  table = np.array([[1, 0], [0.9, 0.1], [0, 1], [-1, 0.1]], np.float32)
  triples = [('a', 'b', 9.0), ('a', 'c', 5.0), ('a', 'd', 1.0),
             ('a', 'zz', 3.0)]
  sim = metrics.similarity_spearman(table, ids, triples)
  assert sim['covered_pairs'] == 3 and sim['pairs'] == 4
  assert sim['spearman'] == pytest.approx(1.0)
  rel = metrics.related_recall_at_k(table, ids, [('a', 'b'), ('c', 'q')], 1)
  assert rel['covered_pairs'] == 1
  assert rel['recall_at_k'] == 1.0


def test_negatives_follow_the_trainer_distribution():
  counts = [1000, 10, 10, 10]
  p = heldout.eval_pairs([['a', 'b', 'c', 'd'] * 50], ['a', 'b', 'c', 'd'],
                         counts, 1, 20, 0.0)
  share = np.mean(p.negatives == 0)
  weights = np.power(counts, skipgram_negatives.NEGATIVE_SAMPLING_POWER)
  assert share == pytest.approx(weights[0] / weights.sum(), abs=0.05)


def test_analogy_accuracy_finds_b_minus_a_plus_c_leaving_out_the_question():
  words = ['man', 'woman', 'king', 'queen', 'apple', 'Paris']
  ids = {w: i for i, w in enumerate(words)}
  table = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 0],
                    [0, 0, 0, 1], [0, 0, 0, 0]], np.float32)
  questions = [('man', 'woman', 'king', 'queen'),   # hit
               ('MAN', 'King', 'woman', 'queen'),   # lower-cased, hit
               ('man', 'woman', 'king', 'apple'),   # miss
               ('man', 'woman', 'king', 'rome')]    # not covered
  result = metrics.analogy_accuracy(table, ids, questions)
  assert result['covered_questions'] == 3
  assert result['analogy_accuracy'] == pytest.approx(2 / 3)
  # A zero row (unknown to this model) is never an answer.
  zero_answer = [('man', 'woman', 'apple', 'Paris')]
  assert metrics.analogy_accuracy(table, ids, zero_answer)[
      'analogy_accuracy'] == 0.0
  assert metrics.analogy_accuracy(table, ids, questions[3:])[
      'analogy_accuracy'] is None


def test_similarity_matches_capitalized_words_lower_cased():
  ids = {'tiger': 0, 'cat': 1, 'car': 2, 'paris': 3}
  table = np.array([[1, 0.1], [1, 0.2], [0, 1], [0.5, 0.5]], np.float32)
  triples = [('Tiger', 'cat', 9.0), ('tiger', 'car', 1.0),
             ('cat', 'Paris', 5.0), ('cat', 'rome', 3.0)]
  result = metrics.similarity_spearman(table, ids, triples)
  assert result['covered_pairs'] == 3
  assert result['spearman'] == pytest.approx(1.0)
