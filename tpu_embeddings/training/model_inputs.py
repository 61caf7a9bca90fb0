"""What a training run reads, for any module: its context, the resolved spec,
the input batches, and how many steps an epoch is.

All checked before anything is written: the Examples hold the module's
FEATURES, every spec feature is one the input gives, each table's
vocabulary exists (its size sets the table's), the input fills a batch.
"""

from typing import Any, Sequence

import tensorflow as tf

from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.models import feature_input
from tpu_embeddings.models import spec_vocabularies
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.model_module import check_spec_features
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training.config import TrainerConfig

TRAIN_SPLIT = 'train'


def context(module: ModelModule, config: TrainerConfig,
            vocabularies: vocabularies_lib.Vocabularies,
            examples_uris: Sequence[str], num_replicas: int = 1
            ) -> ModelContext:
  """The run's `ctx`; the Examples' feature kinds read from the train split
  (a feature of FEATURES missing there is a one-line error)."""
  _check_vocabulary_features(module, vocabularies)
  kinds = {}
  if module.features:
    kinds = raw_features.feature_kinds(
        raw_features.split_files(examples_uris, TRAIN_SPLIT),
        sorted(module.features))
  return ModelContext(
      features=module.features, vocabularies=vocabularies, settings=config,
      custom_config=dict(config.custom_config),
      global_batch_size=config.batch_size, num_replicas=num_replicas,
      seed=config.seed, examples_uris=tuple(examples_uris),
      feature_kinds=kinds)


def _check_vocabulary_features(module: ModelModule,
                               vocabularies: vocabularies_lib.Vocabularies):
  """Each named vocabulary counted the features FEATURES maps to it."""
  for name in sorted(set(module.features.values())):
    want = sorted(f for f, v in module.features.items() if v == name)
    counted = vocabularies.features.get(name)
    if counted is not None and sorted(counted) != want:
      raise ValueError(
          f'vocabulary {name!r} counts features {sorted(counted)} but '
          f'FEATURES of module file {module.path} maps {want} to it; build '
          'the vocabulary with the same module file')


def resolve_spec(module: ModelModule, ctx: ModelContext) -> EmbeddingSpec:
  """The module's spec with each table's vocabulary and size set, checked."""
  spec = module.embedding_spec(ctx)
  if module.input_fn is None and not module.builtin:
    check_spec_features(module, spec, sorted(module.features))
  spec = spec_vocabularies.resolve(spec, module.features, ctx.vocabularies)
  # Fail here, not mid-training, on optimizer options TF itself rejects.
  spec.build_optimizer()
  return spec


def batches(module: ModelModule, spec: EmbeddingSpec, ctx: ModelContext,
            epochs: int) -> tf.data.Dataset:
  """(ids, extras) batches: the module's input_fn, else its FEATURES."""
  if module.input_fn is not None:
    return module.input_fn(ctx, epochs)
  return feature_input.batches(module, spec, ctx, epochs)


def _hook(module: ModelModule, name: str) -> Any:
  return module.hook(name) or getattr(feature_input, name)


def check(module: ModelModule, ctx: ModelContext):
  """The module's own input check (skip-gram: the splits give pairs), else
  that the train split fills a batch."""
  _hook(module, 'check_input')(ctx)


def heldout_pairs(module: ModelModule, ctx: ModelContext):
  """Skip-gram's held-out sample (heldout.EvalPairs), read once per run;
  None for a module file or without an eval split."""
  hook = module.hook('heldout_pairs') if module.builtin else None
  return hook(ctx) if hook else None


def planned_steps(module: ModelModule, ctx: ModelContext,
                  config: TrainerConfig) -> int:
  """The steps the learning rate decays over: `train_steps`, or the expected
  steps of `epochs` passes; 0 without decay."""
  if not config.learning_rate_decay:
    return 0
  if config.train_steps:
    return config.train_steps
  per_epoch = _hook(module, 'examples_per_epoch')(ctx)
  return max(1, int(config.epochs * per_epoch // config.batch_size))
