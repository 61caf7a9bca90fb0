"""What a training run reads, for any module: its context, the resolved spec,
the input (a factory of one input pipeline's batches), and how many steps an
epoch is.

All checked before anything is written: the Examples hold the module's
FEATURES, every spec feature is one the input gives, each table's
vocabulary exists (its size sets the table's), the input fills a batch.
"""

import inspect
from typing import Any, Sequence

import tensorflow as tf

from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.core import input_pipelines
from tpu_embeddings.core import splits
from tpu_embeddings.core.input_pipelines import InputFn
from tpu_embeddings.models import feature_input
from tpu_embeddings.models import heldout
from tpu_embeddings.models import spec_vocabularies
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.models.user_code import UserCodeError
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training.config import TrainerConfig


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
        raw_features.split_files(examples_uris, splits.TRAIN_SPLIT),
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


def check_spec_features(module: ModelModule, spec: EmbeddingSpec,
                        available: Sequence[str]):
  """Every spec feature must be one the input gives (FEATURES by default)."""
  missing = [f.name for f in spec.features if f.name not in available]
  if missing:
    raise ModelModuleError(
        f'module file {module.path}: embedding_spec: feature(s) {missing} '
        f'are not in FEATURES {sorted(available)}; name each spec feature '
        'after the Examples feature it looks up (or give an input_fn)')


def resolve_spec(module: ModelModule, ctx: ModelContext) -> EmbeddingSpec:
  """The module's spec with each table's vocabulary and size set, checked."""
  spec = module.embedding_spec(ctx)
  if module.input_fn is None:
    check_spec_features(module, spec, sorted(module.features))
  spec = spec_vocabularies.resolve(spec, module.features, ctx.vocabularies)
  # Fail here, not mid-training, on optimizer options TF itself rejects.
  spec.build_optimizer()
  return spec


def _reads_its_share(module: ModelModule) -> bool:
  """Whether the module's input_fn takes an `input_context` (it then reads
  one input pipeline's share itself)."""
  return 'input_context' in inspect.signature(
      module.declared('input_fn')).parameters


def input_factory(module: ModelModule, spec: EmbeddingSpec,
                  ctx: ModelContext, epochs: int) -> InputFn:
  """The run's input: for an input pipeline's InputContext, its (ids,
  extras) batches of `epochs` passes (0: endless). The module's input_fn
  (given the context when it takes one, else its global batches cut to the
  pipeline's rows), else its FEATURES read from the train split.

  Each pipeline's dataset is built once and given again to a later call
  for the same pipeline: `element_spec` and the CPU adapter share one
  dataset, built once as before the input was a factory.
  """
  if module.input_fn is None:
    build = lambda context: feature_input.batches(module, spec, ctx, epochs,
                                                   context)
  elif _reads_its_share(module):
    build = lambda context: _dataset(module, module.input_fn(
        ctx, epochs, input_context=context))
  else:
    build = lambda context: input_pipelines.row_share(
        _dataset(module, module.input_fn(ctx, epochs)), context)
  built = {}

  def batches(context: tf.distribute.InputContext) -> tf.data.Dataset:
    key = (context.num_input_pipelines, context.input_pipeline_id)
    if key not in built:
      built[key] = input_pipelines.without_autotune(build(context))
    return built[key]

  return batches


def _dataset(module: ModelModule, found: Any) -> tf.data.Dataset:
  """What input_fn returned, checked to be a dataset."""
  if not isinstance(found, tf.data.Dataset):
    raise UserCodeError(module.path, 'input_fn', f'returned a '
                        f'{type(found).__name__}; it must return a '
                        'tf.data.Dataset of (ids, extras) batches')
  return found


def element_spec(input_fn: InputFn):
  """The element spec of a global batch: one input pipeline's."""
  return input_fn(input_pipelines.single()).element_spec


def _hook(module: ModelModule, name: str) -> Any:
  return module.hook(name) or getattr(feature_input, name)


def check(module: ModelModule, ctx: ModelContext):
  """The module's own input check (skip-gram: the splits give pairs), else
  that the train split fills a batch."""
  _hook(module, 'check_input')(ctx)


def heldout_pairs(module: ModelModule, ctx: ModelContext):
  """The module's held-out sample of pairs (heldout.EvalPairs, skip-gram's
  `heldout_pairs`), read once per run; None when it declares none or there
  is no eval split."""
  hook = module.hook(heldout.HELDOUT_PAIRS)
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
