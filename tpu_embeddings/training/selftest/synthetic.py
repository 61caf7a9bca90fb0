"""Deterministic synthetic inputs that fit a model: its vocabularies, the
context its functions read, its resolved spec and a batch stream.

No Examples are read: the self-test must run anywhere in minutes. Each
vocabulary has `vocabulary_size` tokens with Zipf-like counts, and ids are
drawn with those frequencies, so a batch repeats frequent ids (the gradients
of duplicate ids must be summed on both sides). The stream is fixed by the
seed: both trainers see the same batches, in the same order.

* skip-gram: (target [B], context [B], negatives [B, K] or, with shared
  negatives, [B/G, S]) ids, no extras;
* a module file: each spec feature a ragged [B, None] bag of 1 to
  `MAX_BAG` ids of its FEATURES vocabulary, as `ctx.to_ids` gives them, and
  the module's `extras_fn` on them and on the serialized tf.Examples holding
  their tokens.
"""

import dataclasses
from typing import Dict, Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.artifacts.vocabulary_file import TokenCounts
from tpu_embeddings.models import spec_vocabularies
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training.model_inputs import check_spec_features

# Ids per example of a module's feature: 1 to MAX_BAG (bags exercise the
# tables' combiners).
MAX_BAG = 3


def _counts(size: int) -> np.ndarray:
  """Zipf-like counts, most frequent first (a vocabulary's row order)."""
  return np.maximum(1, (1_000_000 / np.arange(1, size + 1))).astype(np.int64)


def vocabularies(module: ModelModule,
                 size: int) -> vocabularies_lib.Vocabularies:
  """One vocabulary of `size` tokens per name in FEATURES (skip-gram: the
  single one)."""
  if size < 2:
    raise ValueError(f'selftest: vocabulary_size must be >= 2, got {size}')
  counts = tuple(int(c) for c in _counts(size))
  if module.builtin:
    return vocabularies_lib.single(
        TokenCounts(tuple(f'token{i}' for i in range(size)), counts))
  by_feature = module.features
  names = sorted(set(by_feature.values()))
  return vocabularies_lib.Vocabularies(
      {n: TokenCounts(tuple(f'{n}{i}' for i in range(size)), counts)
       for n in names},
      {n: tuple(sorted(f for f, v in by_feature.items() if v == n))
       for n in names})


def context(module: ModelModule, settings, size: int) -> ModelContext:
  """The `ctx` of a training run on the synthetic vocabularies."""
  return ModelContext(
      features=module.features, vocabularies=vocabularies(module, size),
      settings=settings, custom_config=dict(settings.custom_config),
      global_batch_size=settings.batch_size, seed=settings.seed)


def resolved_spec(module: ModelModule, ctx: ModelContext) -> EmbeddingSpec:
  """The module's spec, each table sized by its synthetic vocabulary."""
  if not module.builtin and not module.features:
    raise ValueError(
        f'selftest: module file {module.path} gives input_fn without '
        'FEATURES; the self-test draws its batches from FEATURES, so define '
        'FEATURES {feature: vocabulary}')
  spec = module.embedding_spec(ctx)
  if not module.builtin:
    check_spec_features(module, spec, sorted(module.features))
  return spec_vocabularies.resolve(spec, module.features, ctx.vocabularies)


def _draw(rng: np.random.Generator, size: int, shape) -> np.ndarray:
  p = _counts(size).astype(np.float64)
  return rng.choice(size, shape, p=p / p.sum()).astype(np.int32)


def _skipgram_batches(ctx: ModelContext, spec: EmbeddingSpec, steps: int,
                      rng: np.random.Generator) -> tf.data.Dataset:
  settings, batch = ctx.settings, ctx.global_batch_size
  size = spec.tables[0].vocabulary_size
  ids = {
      TARGET_FEATURE: _draw(rng, size, (steps, batch)),
      CONTEXT_FEATURE: _draw(rng, size, (steps, batch)),
      NEGATIVES_FEATURE: _draw(rng, size, (steps, settings.negative_groups,
                                           settings.negatives_per_row)),
  }
  return tf.data.Dataset.from_tensor_slices((ids, {}))


def _example(tokens: Dict[str, list]) -> bytes:
  return tf.train.Example(features=tf.train.Features(feature={
      name: tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[t.encode('utf-8') for t in values]))
      for name, values in tokens.items()})).SerializeToString()


@dataclasses.dataclass(frozen=True)
class _Bags:
  """One feature's ids over all steps: flat ids and each example's count."""
  values: np.ndarray
  lengths: np.ndarray

  def ragged(self, steps: int, batch: int) -> tf.RaggedTensor:
    """[steps, batch, None]: one [batch, None] bag batch per step."""
    rows = tf.RaggedTensor.from_row_lengths(self.values, self.lengths)
    return tf.RaggedTensor.from_uniform_row_length(rows, batch)


def _module_batches(module: ModelModule, ctx: ModelContext,
                    spec: EmbeddingSpec, steps: int,
                    rng: np.random.Generator) -> tf.data.Dataset:
  batch, examples = ctx.global_batch_size, steps * ctx.global_batch_size
  bags = {}
  for f in spec.features:
    lengths = rng.integers(1, MAX_BAG + 1, examples)
    bags[f.name] = _Bags(
        _draw(rng, spec.table(f.table).vocabulary_size, int(lengths.sum())),
        lengths)
  tokens = {f: ctx.vocabulary(module.features[f]).tokens for f in bags}
  offsets = {f: np.concatenate([[0], np.cumsum(b.lengths)])
             for f, b in bags.items()}
  serialized = np.array([_example(
      {f: [tokens[f][i] for i in b.values[offsets[f][e]:offsets[f][e + 1]]]
       for f, b in bags.items()}) for e in range(examples)], dtype=object)
  ids = {f: b.ragged(steps, batch) for f, b in bags.items()}
  dataset = tf.data.Dataset.from_tensor_slices(
      (ids, serialized.reshape(steps, batch)))
  return dataset.map(lambda i, s: (i, module.extras(i, s, ctx)))


def batches(module: ModelModule, ctx: ModelContext, spec: EmbeddingSpec,
            steps: int, seed: int) -> tf.data.Dataset:
  """`steps` (ids, extras) batches of `ctx.global_batch_size` examples."""
  rng = np.random.default_rng(seed)
  if module.builtin:
    return _skipgram_batches(ctx, spec, steps, rng)
  return _module_batches(module, ctx, spec, steps, rng)


def shapes(dataset: tf.data.Dataset) -> Tuple[str, ...]:
  """`feature [shape]` of each id feature of a batch, for the report."""
  ids, _ = dataset.element_spec
  return tuple(f'{name} {spec.shape.as_list()}'
               for name, spec in sorted(ids.items()))
