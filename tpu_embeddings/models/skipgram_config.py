"""SkipGramConfig: how token sequences become skip-gram training pairs."""

import dataclasses
import math

from tpu_embeddings.core import settings

# Eval sequences the held-out sample reads by default (the validator's
# max_eval_examples; the trainer's TensorBoard eval loss reads as many).
EVAL_SEQUENCES = 1000
# Seeds: non-negative and within 31 bits, which every seeded library here
# (NumPy, TensorFlow's stateless ops, Beam) takes.
SEEDS = (0, 2**31 - 1)
# The pipeline settings made for skip-gram: its pairs and negatives, and its
# evaluation. Only a model that reads them uses them: the built-in model
# declares them all as its SETTINGS_READ (skipgram_module.py); a module
# file declares the ones its code reads (`ctx.settings`, `ctx.evaluation`),
# and any other is refused before the pipeline runs
# (pipelines/model_settings.py).
# The switch of the corpus-size rule (tpu_embeddings/training/
# corpus_scaling.py), which applies to a model that reads it.
CORPUS_SCALING = 'trainer.corpus_scaling'
SKIPGRAM_SETTINGS = (
    'trainer.window', 'trainer.negatives', 'trainer.shared_negatives',
    'trainer.negative_group', 'trainer.subsample', CORPUS_SCALING,
    'trainer.sequences_per_chunk', 'validator.k',
    'validator.max_recall_queries', 'validator.similarity_file',
    'validator.related_pairs_file', 'validator.analogy_file',
    'validator.beat_frequency_model', 'validator.beat_popularity',
    'validator.min_baseline_coverage')


@dataclasses.dataclass(frozen=True)
class SkipGramConfig(settings.Settings):
  """How sequences become training batches.

  Attributes:
    batch_size: training examples per global batch, over every replica
      (a module model's `ctx.global_batch_size`: what its input gives one
      step, e.g. Examples records; skip-gram's are (target, context)
      pairs).
    window: maximum distance between target and context; each target draws
      its own window size uniformly from 1..window (word2vec).
    negatives: negatives per pair, K.
    shared_negatives: 0: each pair draws its own K negatives. S > 0: each
      group of `negative_group` consecutive pairs of a batch shares S
      negatives, every pair scoring all S with weight K/S (the loss keeps
      the scale of K per pair). Fewer rows drawn, read and updated per pair:
      a faster step, on CPU and TPU alike.
    negative_group: at most this many consecutive pairs share negatives: a
      group is the largest divisor of batch_size up to it (64 of 2048, 50
      of 100), so a batch holds whole groups; on a TPU each replica's share
      of the batch must hold whole groups too.
    subsample: word2vec's sample threshold t; a token with corpus frequency f
      is kept with probability min(1, (sqrt(f/t) + 1) * t/f). 0 keeps all.
    corpus_scaling: the learning rate and `subsample` follow the corpus's
      size: as set up to 1M tokens, a quarter and a tenth of that from 10M
      (tpu_embeddings/training/corpus_scaling.py); false keeps them as set.
    seed: seed of every random choice (initial values, input pipeline).
    sequences_per_chunk: sequences turned into pairs together; the pairs of
      a chunk are shuffled before batching.
    shuffle_buffer: sequences in the shuffle buffer (per epoch).
  """
  WHAT = 'skip-gram'

  # Up to 4M pairs: a TPU pod slice's global batch (~16k per chip on 256
  # chips); a batch's ids and negatives must fit one host's memory.
  batch_size: int = settings.bounded(2048, 1, 1 << 22)
  # word2vec uses 5-10, item sequences 50-200; lines hold at most 10,000
  # tokens, and the pairs (and the plan's estimate of them) grow with it.
  window: int = settings.bounded(5, 1, 1000)
  # word2vec uses 2-20; each is a row read and updated per pair.
  negatives: int = settings.bounded(5, 1, 1000)
  # Shared ones are scored by [group, S] products: S in the thousands is
  # already sampled-softmax sized.
  shared_negatives: int = settings.bounded(16, 0, 8192)
  negative_group: int = settings.bounded(64, 1, 1 << 22)  # <= a batch
  # word2vec uses 1e-3 to 1e-5; at 0.1 only a token making over a quarter
  # of the corpus is thinned at all (none from 0.39 up).
  subsample: float = settings.bounded(1e-3, 0.0, 0.1)
  corpus_scaling: bool = True
  seed: int = settings.bounded(0, *SEEDS)
  # A chunk's pairs are made and shuffled in memory at once: 65,536
  # sequences of 100 tokens at window 5 are ~65M pairs, about 0.5 GB.
  sequences_per_chunk: int = settings.bounded(256, 1, 65_536)
  # Sequences held in memory to shuffle: 1M of 100 tokens are ~1 GB.
  shuffle_buffer: int = settings.bounded(10_000, 1, 1_000_000)

  @property
  def group_size(self) -> int:
    """Pairs sharing a row of negatives: the largest divisor of batch_size
    not above negative_group; 1 when each pair draws its own."""
    if not self.shared_negatives:
      return 1
    return next(size for size in range(min(self.negative_group,
                                           self.batch_size), 0, -1)
                if self.batch_size % size == 0)

  @property
  def negative_groups(self) -> int:
    """Rows of a batch's negatives: one per pair, or one per group."""
    return self.batch_size // self.group_size

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
