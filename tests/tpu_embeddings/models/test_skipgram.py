"""The shared skip-gram core: pairs, subsampling, negatives, batches."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.models import skipgram
from tpu_embeddings.models import skipgram_negatives


def test_pairs_respect_window_and_drop_oov():
  # Row 0: ids 0 1 2 3 with an OOV (-1) between 1 and 2; row 1: 4 5.
  ids = tf.ragged.constant([[0, 1, -1, 2, 3], [4, 5]], dtype=tf.int32)
  keep = tf.ones([6])
  target, context = skipgram.skipgram_pairs(ids, keep, window=1,
                                            seed=tf.constant([1, 2]))
  got = sorted(zip(target.numpy().tolist(), context.numpy().tolist()))
  # OOV removed before windows: 1 and 2 become neighbours; no pair crosses rows.
  want = sorted([(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (4, 5),
                 (5, 4)])
  assert got == want


def test_reduced_window_never_exceeds_window():
  seqs = [list(range(i * 30, i * 30 + 30)) for i in range(20)]
  ids = tf.ragged.constant(seqs, dtype=tf.int32)
  target, context = skipgram.skipgram_pairs(ids, tf.ones([600]), window=3,
                                            seed=tf.constant([3, 4]))
  distance = np.abs(target.numpy() - context.numpy())
  assert distance.min() >= 1 and distance.max() == 3
  # word2vec's reduced window: closer pairs are more frequent.
  counts = collections.Counter(distance.tolist())
  assert counts[1] > counts[2] > counts[3]


def test_keep_probabilities_follow_word2vec():
  counts = [1000, 100, 10, 1]
  keep = skipgram.keep_probabilities(counts, 1e-2)
  f = np.asarray(counts) / sum(counts)
  expected = np.minimum((np.sqrt(f / 1e-2) + 1) * 1e-2 / f, 1.0)
  np.testing.assert_allclose(keep, expected, rtol=1e-6)
  assert keep[0] < keep[1] <= 1.0 and keep[-1] == 1.0
  np.testing.assert_array_equal(skipgram.keep_probabilities(counts, 0), 1.0)


def test_negatives_follow_unigram_to_the_three_quarters():
  counts = np.asarray([500, 200, 100, 50, 20, 10, 5, 1])
  p = skipgram_negatives.negative_sampling_probabilities(counts)
  np.testing.assert_allclose(p, counts**0.75 / np.sum(counts**0.75))
  accept, alias = skipgram_negatives.alias_table(p)
  draws = skipgram_negatives.sample_negatives(
      tf.constant(accept), tf.constant(alias), [200_000],
      tf.constant([5, 6])).numpy()
  freq = np.bincount(draws, minlength=len(p)) / draws.size
  np.testing.assert_allclose(freq, p, atol=0.004)


def test_the_alias_table_holds_each_probability_exactly():
  rng = np.random.default_rng(3)
  cases = [skipgram_negatives.negative_sampling_probabilities(
      rng.zipf(1.3, size=n)) for n in (1, 2, 7, 5000)]
  # One row holding most of the mass gives to every other row; rows just
  # above the mean run out on the first small row and pass it on.
  cases += [np.asarray([0.9] + [0.1 / 999] * 999),
            np.asarray([1.02] * 50 + [0.5] * 2) / 52,
            np.full(4, 0.25), rng.dirichlet(np.full(300, 0.05)),
            # A large row whose excess is used up exactly, at a small row.
            np.asarray([1.5, 1.5, 0.5, 0.5]) / 4]
  for p in cases:
    n = len(p)
    accept, alias = skipgram_negatives.alias_table(p)
    assert accept.dtype == np.float32 and alias.dtype == np.int32
    # Slot i gives i with probability accept[i], alias[i] otherwise.
    mass = accept.astype(np.float64) + np.bincount(
        alias, weights=1.0 - accept.astype(np.float64), minlength=n)
    np.testing.assert_allclose(mass / n, p, rtol=1e-5, atol=1e-9)


@pytest.mark.slow
def test_batches_have_static_shapes_and_resume_exactly():
  tokens = [f't{i}' for i in range(30)]
  counts = list(range(300, 0, -10))
  rng = np.random.default_rng(1)
  lines = [[tokens[j] for j in rng.integers(0, 30, size=rng.integers(2, 12))]
           + ['unknown-token'] for _ in range(200)]
  seqs = tf.data.Dataset.from_tensor_slices(tf.ragged.constant(lines))
  config = skipgram.SkipGramConfig(batch_size=64, window=2, negatives=3,
                                   shared_negatives=0, subsample=0.0,
                                   seed=7, sequences_per_chunk=16)
  data = skipgram.SkipGramData(tokens, counts, config)
  full = list(data.batches(seqs, epochs=2).as_numpy_iterator())
  assert len(full) > 10
  for b in full:
    assert b['target'].shape == (64,) and b['context'].shape == (64,)
    assert b['negatives'].shape == (64, 3)
    for v in b.values():
      assert v.min() >= 0 and v.max() < 30  # OOV never appears
  resumed = list(data.batches(seqs, epochs=2, skip=5).as_numpy_iterator())
  assert len(resumed) == len(full) - 5
  for a, b in zip(full[5:], resumed):
    for k in a:
      np.testing.assert_array_equal(a[k], b[k])
  # Two epochs hold twice the pairs of one (up to the dropped remainder).
  one = len(list(data.batches(seqs, epochs=1)))
  assert abs(len(full) - 2 * one) <= 1


@pytest.mark.parametrize('field,value', [('batch_size', 0), ('window', -1),
                                         ('negatives', 1.5),
                                         ('subsample', 1.0)])
def test_bad_config_names_the_field(field, value):
  with pytest.raises(ValueError, match=field):
    skipgram.SkipGramConfig(**{field: value}).validate()


@pytest.mark.slow
def test_expected_pairs_match_the_pairs_drawn():
  """Mean pair count over 200 draws vs the closed form (no subsampling)."""
  lengths = [1, 2, 3, 7, 40]
  ids = tf.ragged.constant([list(range(n)) for n in lengths])
  keep = tf.ones([40])
  drawn = [int(tf.size(skipgram.skipgram_pairs(
      ids, keep, 5, tf.constant([s, 0], tf.int64))[0])) for s in range(200)]
  expected = skipgram.expected_pairs(lengths, 5)
  assert expected[0] == 0 and expected[1] == pytest.approx(2.0)
  assert np.mean(drawn) == pytest.approx(expected.sum(), rel=0.03)
