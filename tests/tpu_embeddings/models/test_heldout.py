"""Tests of tpu_embeddings/models/heldout.py: the sample and the loss on
gathered rows."""

import numpy as np
import pytest

from tests.support import artifact_fixtures as fx
from tpu_embeddings.models import heldout
from tpu_embeddings.models import skipgram
from tpu_embeddings.models.skipgram_config import SkipGramConfig


def test_loss_of_rows_equals_the_loss_on_the_whole_table():
  rng = np.random.default_rng(3)
  tokens = [f't{i}' for i in range(5000)]
  counts = [1000] * 120 + [1] * 4880
  sequences = [list(rng.choice(tokens[:120], 12)) for _ in range(30)]
  pairs = heldout.eval_pairs(sequences, tokens, counts, window=2,
                             num_negatives=3, subsample=0.0, seed=1)
  table = rng.normal(size=(5000, 8)).astype(np.float32)
  asked = []

  def rows_of(ids):
    asked.append(ids)
    return table[ids]

  whole = heldout.skipgram_loss(table, pairs.targets, pairs.contexts,
                                pairs.negatives)
  assert heldout.loss_of_rows(rows_of, pairs) == whole
  # Only the rows the pairs use were read, a slice of pairs at a time.
  used = set(np.concatenate([pairs.targets, pairs.contexts,
                             pairs.negatives.ravel()]).tolist())
  assert set(np.concatenate([a.ravel() for a in asked]).tolist()) == used
  assert max(a.size for a in asked) <= 8192 * 3

def test_a_contexts_table_scores_contexts_and_negatives():
  rng = np.random.default_rng(4)
  tokens = [f't{i}' for i in range(300)]
  sequences = [list(rng.choice(tokens, 10)) for _ in range(20)]
  pairs = heldout.eval_pairs(sequences, tokens, [5] * 300, window=2,
                             num_negatives=3, subsample=0.0, seed=2)
  inputs = rng.normal(size=(300, 4)).astype(np.float32)
  outputs = rng.normal(size=(300, 4)).astype(np.float32)
  # By hand: softplus(-t.c) + sum_k softplus(t.n_k), averaged over pairs.
  t = inputs[pairs.targets]
  pos = np.sum(t * outputs[pairs.contexts], -1)
  neg = np.einsum('pd,pkd->pk', t, outputs[pairs.negatives])
  expected = np.mean(np.logaddexp(0, -pos) + np.logaddexp(0, neg).sum(-1))
  loss = heldout.skipgram_loss(inputs, pairs.targets, pairs.contexts,
                               pairs.negatives, outputs)
  assert loss == pytest.approx(expected, rel=1e-5)
  assert loss != pytest.approx(heldout.skipgram_loss(
      inputs, pairs.targets, pairs.contexts, pairs.negatives), rel=1e-3)
  assert heldout.loss_of_rows(lambda ids: inputs[ids], pairs,
                              lambda ids: outputs[ids]) == pytest.approx(
                                  loss, rel=1e-6)


def test_read_pairs_takes_the_first_sequences_of_every_eval_split(tmp_path):
  a = fx.write_examples(str(tmp_path / 'a'), {'eval': [['x', 'y']] * 3})
  b = fx.write_examples(str(tmp_path / 'b'), {'eval': [['y', 'z']] * 3})
  config = SkipGramConfig(window=1, subsample=0.0)
  pairs = heldout.read_pairs([a, b], ['y', 'x', 'z'], [6, 3, 3], config,
                             max_sequences=4, seed=0)
  assert pairs.sequences == 4
  assert set(pairs.targets.tolist()) == {0, 1, 2}
  with pytest.raises(FileNotFoundError, match="split 'eval'"):
    heldout.read_pairs([str(tmp_path)], ['y'], [1], config, 10, 0)


def test_pairs_beyond_the_cap_are_a_seeded_sample_of_them():
  rng = np.random.default_rng(2)
  tokens = [f't{i}' for i in range(50)]
  sequences = [[tokens[i] for i in rng.integers(0, 50, 40)]
               for _ in range(30)]
  whole = heldout.eval_pairs(sequences, tokens, [5] * 50, window=3,
                             num_negatives=2, subsample=0.0, seed=4,
                             max_pairs=0)
  capped = heldout.eval_pairs(sequences, tokens, [5] * 50, window=3,
                              num_negatives=2, subsample=0.0, seed=4,
                              max_pairs=500)
  assert whole.targets.size > 2000 and capped.targets.size == 500
  assert capped.negatives.shape == (500, 2)
  # A subset of the same pairs, spread over the whole sample.
  pairs = set(zip(whole.targets.tolist(), whole.contexts.tolist()))
  assert set(zip(capped.targets.tolist(), capped.contexts.tolist())) <= pairs
  again = heldout.eval_pairs(sequences, tokens, [5] * 50, window=3,
                             num_negatives=2, subsample=0.0, seed=4,
                             max_pairs=500)
  np.testing.assert_array_equal(again.negatives, capped.negatives)


def test_the_runs_sampler_lends_its_tables_and_the_pairs_are_the_same(
    tmp_path):
  rng = np.random.default_rng(3)
  tokens = [f't{i}' for i in range(40)]
  counts = [int(c) for c in rng.integers(1, 500, 40)]
  uri = fx.write_examples(str(tmp_path / 'e'), {'eval': [
      [tokens[i] for i in rng.integers(0, 40, 30)] + ['oov']
      for _ in range(20)]})
  config = SkipGramConfig(window=4, negatives=3, subsample=1e-2)
  own = heldout.read_pairs([uri], tokens, counts, config, 20, seed=1)
  lent = heldout.read_pairs([uri], tokens, counts, config, 20, seed=1,
                            data=skipgram.SkipGramData(tokens, counts, config))
  assert own.targets.size > 100 and lent.oov_tokens == own.oov_tokens == 20
  for name in ('targets', 'contexts', 'negatives'):
    np.testing.assert_array_equal(getattr(lent, name), getattr(own, name))


def test_a_compact_vocabulary_gives_the_same_pairs(tmp_path):
  from tpu_embeddings.artifacts import compact_vocabulary
  rng = np.random.default_rng(5)
  tokens = [f't{i}' for i in range(40)]
  counts = [int(c) for c in rng.integers(1, 500, 40)]
  uri = fx.write_examples(str(tmp_path / 'e'), {'eval': [
      [tokens[i] for i in rng.integers(0, 40, 30)] + ['oov', 't4x']
      for _ in range(20)]})
  config = SkipGramConfig(window=4, negatives=3, subsample=1e-2)
  listed = heldout.read_pairs([uri], tokens, counts, config, 20, seed=1)
  compact = heldout.read_pairs(
      [uri], compact_vocabulary.CompactVocabulary.from_tokens(tokens, counts),
      np.asarray(counts), config, 20, seed=1)
  assert listed.targets.size > 100 and compact.oov_tokens == 40
  for name in ('targets', 'contexts', 'negatives'):
    np.testing.assert_array_equal(getattr(compact, name),
                                  getattr(listed, name))
