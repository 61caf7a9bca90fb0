"""`ctx`: what the pipeline tells a module's functions, as TFX's FnArgs does.

The same object reaches every function of a module file; each component
fills what it knows (the trainer its settings and batch sizes, the exporter
lookups that survive a SavedModel). A field a phase does not know raises a
one-line error saying so.
"""

import dataclasses
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.artifacts.vocabulary_file import OOV_ID
from tpu_embeddings.artifacts.vocabulary_file import TokenCounts
from tpu_embeddings.core.splits import EVAL_SPLIT
from tpu_embeddings.core.splits import TRAIN_SPLIT

# tokens (a string tensor of any shape) -> int64 row ids, OOV_ID when unknown.
Lookup = Callable[[tf.Tensor], tf.Tensor]


def static_lookup(tokens: Sequence[str]) -> Lookup:
  """An in-memory token -> row table (training input, in-process scoring)."""
  with tf.init_scope():  # created once, eagerly, even from a traced function
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(tokens), tf.string),
            tf.range(len(tokens), dtype=tf.int64)),
        default_value=tf.constant(OOV_ID, tf.int64))
  return table.lookup


def ids_of(tokens: tf.RaggedTensor, lookup: Lookup) -> tf.RaggedTensor:
  """Ragged [B, None] tokens -> ragged [B, None] int32 rows, OOV removed (an
  unknown token is never looked up; a bag of only unknown tokens is empty and
  its activation zero)."""
  flat = lookup(tokens.flat_values)
  known = flat >= 0
  # `tf.ragged.boolean_mask` with its checks, in a few ops: the known ids,
  # and each row's count of them as its new length.
  rows = tf.math.unsorted_segment_sum(
      tf.cast(known, tokens.row_splits.dtype), tokens.value_rowids(),
      tokens.nrows())
  return tf.RaggedTensor.from_row_splits(
      tf.cast(tf.boolean_mask(flat, known), tf.int32),
      tf.concat([tokens.row_splits[:1], tf.cumsum(rows)], 0), validate=False)


@dataclasses.dataclass
class ModelContext:
  """The `ctx` argument of every function of a module file.

  Attributes:
    features: FEATURES of the module, {feature: vocabulary}.
    vocabularies: the vocabularies the tables follow, by name.
    settings: the trainer's TrainerConfig (while training).
    custom_config: `trainer.custom_config`, free-form settings of the module.
    global_batch_size: examples per step over all replicas (training).
    num_replicas: replicas the global batch is split over (1 on CPU).
    seed: the run's seed.
    examples_uris: the Examples artifacts read (train and eval splits).
    feature_kinds: {feature: 'bytes' | 'int64'} as the Examples hold them.
    lookups: {vocabulary: Lookup}; by default in-memory tables, the exports
      set lookups that live in the SavedModel or the Hub module.
    max_eval_examples: eval records `eval_examples` reads (0: all).
    model_uri: the Model read, outside training (validation, export).
    evaluation: the validator's settings while validating (its
      ValidatorConfig: k, evaluation files, seed, thresholds), else None.
  """
  features: Mapping[str, str] = dataclasses.field(default_factory=dict)
  vocabularies: Optional[vocabularies_lib.Vocabularies] = None
  settings: Any = None
  custom_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  global_batch_size: int = 0
  num_replicas: int = 1
  seed: int = 0
  examples_uris: Tuple[str, ...] = ()
  feature_kinds: Mapping[str, str] = dataclasses.field(default_factory=dict)
  lookups: Dict[str, Lookup] = dataclasses.field(default_factory=dict)
  max_eval_examples: int = 0
  model_uri: str = ''
  evaluation: Any = None
  # What a model keeps for the phase (e.g. skip-gram's pair sampler).
  cache: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

  def _require(self, name: str, known: bool, phase: str):
    if not known:
      raise ValueError(f'ctx.{name} is not known {phase}')

  # -- vocabularies -----------------------------------------------------------
  def vocabulary(self, name: str) -> TokenCounts:
    self._require('vocabulary', self.vocabularies is not None,
                  'before the vocabularies are read')
    return self.vocabularies[name]

  def vocabulary_size(self, name: str) -> int:
    return len(self.vocabulary(name))

  def counts(self, name: str) -> np.ndarray:
    """Training-split count of each token of vocabulary `name`, row order."""
    return np.asarray(self.vocabulary(name).counts, np.int64)

  def log_frequency(self, name: str) -> tf.Tensor:
    """log(count / total) of each row of vocabulary `name`: [V] float32
    (e.g. the logQ correction of in-batch negatives)."""
    counts = self.counts(name).astype(np.float64)
    return tf.constant(np.log(counts / counts.sum()), tf.float32)

  # -- raw features -> ids ----------------------------------------------------
  def lookup(self, vocabulary: str) -> Lookup:
    if vocabulary not in self.lookups:
      self.lookups[vocabulary] = static_lookup(
          self.vocabulary(vocabulary).tokens)
    return self.lookups[vocabulary]

  def to_ids(self, raw: Mapping[str, Any]) -> Dict[str, tf.RaggedTensor]:
    """{feature: raw values} -> {feature: ragged [B, None] int32 rows}.

    Raw values are [B] strings (a bag's tokens separated by whitespace), [B]
    integers, or ragged [B, None] of either; unknown tokens are removed.
    """
    unknown = sorted(set(raw) - set(self.features))
    if unknown:
      raise ValueError(f'ctx.to_ids: {unknown} are not in FEATURES '
                       f'{sorted(self.features)}')
    return {name: ids_of(raw_features.tokens(values),
                         self.lookup(self.features[name]))
            for name, values in raw.items()}

  # -- numbers: labels and dense inputs ---------------------------------------
  def numbers(self, examples: tf.Tensor, feature: str,
              split: str = TRAIN_SPLIT) -> tf.Tensor:
    """[B] float32: the number each serialized tf.Example of `examples`
    holds in `feature` (a label, a dense input), int64 or float as the
    split's Examples hold it (CsvExampleGen makes a column of integers
    int64, one with "4.5" float); for `extras_fn` and `eval_fn`."""
    key = ('number_kind', split, feature)
    if key not in self.cache:  # read once, outside any traced function
      self._require('examples_uris', bool(self.examples_uris),
                    'without Examples')
      with tf.init_scope():
        self.cache[key] = raw_features.number_kind(
            raw_features.split_files(self.examples_uris, split), feature)
    return raw_features.parse_numbers(examples, feature, self.cache[key])

  # -- batches ----------------------------------------------------------------
  @property
  def per_replica_batch_size(self) -> int:
    self._require('global_batch_size', self.global_batch_size > 0,
                  'outside training')
    return self.global_batch_size // self.num_replicas

  def scale_loss(self, per_example_loss: tf.Tensor) -> tf.Tensor:
    """Sum of this replica's per-example losses / the global batch size."""
    self._require('global_batch_size', self.global_batch_size > 0,
                  'outside training')
    return tf.reduce_sum(per_example_loss) / float(self.global_batch_size)

  # -- held-out data (eval_fn) ------------------------------------------------
  def read_split(self, split: str, features: Sequence[str] = (),
                 limit: int = 0) -> Dict[str, np.ndarray]:
    """{feature: [N] str array} of a split: each record's tokens joined by
    spaces, ready for raw-feature signatures (default: every FEATURES)."""
    self._require('examples_uris', bool(self.examples_uris),
                  'without Examples')
    names = tuple(features) or tuple(sorted(self.features))
    key = ('read_split', split, names, limit)
    if key not in self.cache:  # eval_fn scores several models on it
      files = raw_features.split_files(self.examples_uris, split)
      # The split's own kinds: CsvExampleGen infers each split's apart.
      self.cache[key] = raw_features.read_joined(
          files, raw_features.feature_kinds(files, names), limit)
    return self.cache[key]

  def eval_examples(self, features: Sequence[str] = ()
                    ) -> Dict[str, np.ndarray]:
    """`read_split(EVAL_SPLIT)`, the first `max_eval_examples` records."""
    return self.read_split(EVAL_SPLIT, features, self.max_eval_examples)

  def eval_numbers(self, feature: str) -> np.ndarray:
    """[N] float32: a number feature (a label) of the records
    `eval_examples` gives, in the same order."""
    key = ('eval_numbers', feature, self.max_eval_examples)
    if key not in self.cache:  # eval_fn scores several models on it
      self._require('examples_uris', bool(self.examples_uris),
                    'without Examples')
      found = raw_features.records(
          raw_features.split_files(self.examples_uris, EVAL_SPLIT))
      if self.max_eval_examples:
        found = found.take(self.max_eval_examples)
      self.cache[key] = np.concatenate(
          [np.zeros([0], np.float32)] +
          [self.numbers(batch, feature, EVAL_SPLIT).numpy()
           for batch in found.batch(4096)])
    return self.cache[key]

  def catalog(self, features: Sequence[str],
              split: str = TRAIN_SPLIT) -> Dict[str, np.ndarray]:
    """The distinct values of `features[0]` in a split, each with the other
    features of its first record (e.g. every item with its category)."""
    return raw_features.distinct(self.read_split(split, features),
                                 features[0])
