"""SkipGramBatches gives SkipGramData's batches, with and without the ops."""

import numpy as np
import pytest
import tensorflow as tf

from tests.support import artifact_fixtures as fx
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.kernels import library
from tpu_embeddings.models import skipgram
from tpu_embeddings.models import skipgram_negatives
from tpu_embeddings.models.skipgram_input import SkipGramBatches

VOCABULARY = [f'w{i}' for i in range(60)]
COUNTS = list(range(600, 0, -10))
CONFIG = skipgram.SkipGramConfig(batch_size=64, window=4, negatives=3,
                                 shuffle_buffer=50, sequences_per_chunk=16,
                                 subsample=1e-2, seed=3)


@pytest.fixture(scope='module')
def ops_built():
  library.build()  # fails, saying why, where the ops cannot be built


@pytest.fixture(scope='module')
def examples(tmp_path_factory):
  """Two Examples artifacts: Zipf tokens, OOV ones (w60+), empty and
  one-token sequences among them."""
  rng = np.random.default_rng(0)
  uris = []
  for a in range(2):
    sequences = [[f'w{int(x) % 80}' for x in rng.zipf(1.3, rng.integers(0, 30))]
                 for _ in range(100)]
    uri = str(tmp_path_factory.mktemp(f'examples{a}'))
    uris.append(fx.write_examples(uri, {'train': sequences}))
  return uris


def stacked(batches: tf.data.Dataset):
  """All batches in one tensor per feature: [batches, B, ...]."""
  return next(iter(batches.batch(1_000_000)))


def token_sequences(uris):
  return examples_io.token_dataset(uris[0], 'train').concatenate(
      examples_io.token_dataset(uris[1], 'train'))


@pytest.fixture(scope='module')
def reference(examples):
  """SkipGramData's batches of two epochs, resumed after 5 batches."""
  data = skipgram.SkipGramData(VOCABULARY, COUNTS, CONFIG)
  return stacked(data.batches(token_sequences(examples), epochs=2, skip=5))


def assert_same(got, want):
  assert got['target'].shape[0] == want['target'].shape[0] > 10
  for name in want:
    np.testing.assert_array_equal(got[name].numpy(), want[name].numpy(),
                                  err_msg=name)


@pytest.mark.parametrize('use_ops,cache', [
    (True, False), (True, True),
    pytest.param(False, False, marks=pytest.mark.slow)])
def test_the_same_batches_as_skipgram_data(ops_built, examples, reference,
                                           use_ops, cache):
  """The second pass reads the ids from memory with `cache`: the same
  batches still."""
  fast = SkipGramBatches(skipgram.SkipGramData(VOCABULARY, COUNTS, CONFIG),
                         use_ops=use_ops)
  assert fast.uses_ops == use_ops
  got = stacked(fast.batches(fast.id_sequences(examples, 'train', cache),
                             epochs=2, skip=5))
  assert_same(got, reference)


@pytest.mark.slow
def test_token_sequences_give_the_same_batches(ops_built, examples,
                                               reference):
  fast = SkipGramBatches(skipgram.SkipGramData(VOCABULARY, COUNTS, CONFIG))
  got = stacked(fast.batches(fast.ids_of(token_sequences(examples)),
                             epochs=2, skip=5))
  assert_same(got, reference)


SHARED = CONFIG.replace(shared_negatives=6, negative_group=16)


def test_shared_negatives_are_drawn_per_batch_and_survive_a_resume(
    ops_built, examples, reference):
  """With shared negatives the pairs are the per-pair batches' pairs; each
  batch holds [B/G, S] negatives keyed by its index, so batch i is the same
  whether the run started at 0 or skipped to i."""
  fast = SkipGramBatches(skipgram.SkipGramData(VOCABULARY, COUNTS, SHARED))
  sequences = fast.id_sequences(examples, 'train')
  resumed = stacked(fast.batches(sequences, epochs=2, skip=5))
  whole = stacked(fast.batches(sequences, epochs=2))
  assert resumed['negatives'].shape[1:] == [4, 6]
  for name in ('target', 'context'):
    np.testing.assert_array_equal(resumed[name], reference[name])
  np.testing.assert_array_equal(resumed['negatives'], whole['negatives'][5:])
  slow = skipgram.SkipGramData(VOCABULARY, COUNTS, SHARED)
  assert_same(resumed, stacked(slow.batches(token_sequences(examples),
                                            epochs=2, skip=5)))
  drawn = resumed['negatives'].numpy()
  assert len({row.tobytes() for batch in drawn for row in batch}) > 1
  # Drawn for many batches at once, but each batch its own.
  assert len(drawn) > 2
  assert len({batch.tobytes() for batch in drawn}) == len(drawn)


def test_a_batch_never_waits_for_the_pairs_of_the_batches_after_it():
  # A short run on a small corpus would otherwise make a whole draw's worth
  # of batches (up to 64) before its first step.
  accept, alias = skipgram_negatives.alias_table(
      skipgram_negatives.negative_sampling_probabilities(COUNTS))

  def batch(index):
    made = tf.debugging.Assert(index < 3, ['batch', index, 'was made'])
    with tf.control_dependencies([made]):
      return {'target': tf.fill([SHARED.batch_size], tf.cast(index, tf.int32))}

  batches = skipgram_negatives.with_shared_negatives(
      tf.data.Dataset.range(10).map(batch), tf.constant(accept),
      tf.constant(alias), SHARED)
  taken = list(batches.take(3))
  assert [int(b['target'][0]) for b in taken] == [0, 1, 2]
  assert {b['negatives'].shape for b in taken} == {(
      SHARED.negative_groups, SHARED.shared_negatives)}


def test_a_draw_of_shared_negatives_covers_a_bounded_number_of_pairs():
  draw_batches = skipgram_negatives.draw_batches
  assert draw_batches(512) == skipgram_negatives.DRAW_MOST_BATCHES
  assert draw_batches(skipgram_negatives.DRAW_PAIRS // 4) == 4
  assert draw_batches(1 << 22) == 1


def test_an_id_outside_the_vocabulary_is_refused(ops_built):
  ops = library.load()
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='id 7 is outside the vocabulary of 5'):
    ops.skip_gram_keep(tf.constant([1, 7], tf.int32),
                       tf.constant([0, 2], tf.int64), tf.zeros([2]),
                       tf.ones([5]))


def test_expected_kept_is_each_sequences_sum_of_keep_probabilities(examples):
  data = skipgram.SkipGramData(VOCABULARY, COUNTS, CONFIG)
  made = SkipGramBatches(data)
  got = np.concatenate([k.numpy() for k in made.expected_kept(examples,
                                                              'train')])
  keep = skipgram.keep_probabilities(COUNTS, CONFIG.subsample)
  ids = {t: i for i, t in enumerate(VOCABULARY)}
  want = [sum(keep[ids[t]] for t in tokens if t in ids)
          for uri in examples for tokens in examples_io.read_sequences(
              uri, 'train')]
  np.testing.assert_allclose(got, want, rtol=1e-5)
  # The trainer's pairs per epoch come from these.
  assert skipgram.expected_pairs(got, CONFIG.window).sum() > 100


def test_a_chunk_gives_pairs_exactly_when_its_keep_draw_leaves_two_tokens(
    tmp_path, examples):
  data = skipgram.SkipGramData(VOCABULARY, COUNTS, CONFIG)
  made = SkipGramBatches(data, use_ops=False)
  lonely = fx.write_examples(str(tmp_path / 'lonely'), {'train': [
      ['w1'], ['w2', 'x', 'y'], ['unknown', 'w3'], []] * 40})
  # Frequent tokens, heavily subsampled: some chunks give pairs, some not.
  sparse = fx.write_examples(str(tmp_path / 'sparse'), {'train': [
      ['w0', 'w1', 'w0']] * 200})
  answers = []
  for uris in (examples, [lonely], [sparse]):
    for index, chunk in made.chunks(made.id_sequences(uris, 'train')):
      padded, lengths = chunk
      pairs = made.pairs(index, tf.RaggedTensor.from_tensor(padded,
                                                            lengths=lengths))
      gives = made.chunk_gives_pairs(index, chunk)
      assert gives == (int(tf.size(pairs['target'])) > 0)
      answers.append(gives)
  assert True in answers and False in answers
  assert made.yields_pairs(made.id_sequences(examples, 'train'))
  assert not made.yields_pairs(made.id_sequences([lonely], 'train'))
