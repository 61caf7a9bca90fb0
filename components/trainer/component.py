"""TFX component `EmbeddingTrainer`: skip-gram token embeddings, CPU or TPU.

    trainer = EmbeddingTrainer(
        examples=example_gen.outputs['examples'],
        vocabulary=vocabulary_gen.outputs['vocabulary'],
        embedding_spec=skipgram_spec(dim=64, optimizer='adagrad',
                                     learning_rate=0.05),
        batch_size=1024, train_steps=20_000, tpu='auto')
    trainer.outputs['model']      # checkpoint + spec + vocabulary + metadata
    trainer.outputs['model_run']  # TensorBoard scalars under train/
"""

from typing import Optional, Union

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components import artifact_types
from components.embedding_spec import EmbeddingSpec
from components.trainer import executor

_DEFAULTS = executor.TrainerConfig()


class EmbeddingTrainerSpec(types.ComponentSpec):
  """Inputs, parameters and outputs of EmbeddingTrainer."""
  PARAMETERS = {
      'embedding_spec': ExecutionParameter(type=str),
      'batch_size': ExecutionParameter(type=int, optional=True),
      'train_steps': ExecutionParameter(type=int, optional=True),
      'epochs': ExecutionParameter(type=int, optional=True),
      'window': ExecutionParameter(type=int, optional=True),
      'negatives': ExecutionParameter(type=int, optional=True),
      'subsample': ExecutionParameter(type=float, optional=True),
      'checkpoint_every': ExecutionParameter(type=int, optional=True),
      'log_every': ExecutionParameter(type=int, optional=True),
      'tpu': ExecutionParameter(type=str, optional=True),
      'seed': ExecutionParameter(type=int, optional=True),
      'warm_start_uri': ExecutionParameter(type=str, optional=True),
      'warm_start_push_root': ExecutionParameter(type=str, optional=True),
  }
  INPUTS = {
      executor.EXAMPLES_KEY: ChannelParameter(type=standard_artifacts.Examples),
      executor.VOCABULARY_KEY: ChannelParameter(
          type=artifact_types.Vocabulary),
      executor.BASE_MODEL_KEY: ChannelParameter(
          type=standard_artifacts.Model, optional=True),
  }
  OUTPUTS = {
      executor.MODEL_KEY: ChannelParameter(type=standard_artifacts.Model),
      executor.MODEL_RUN_KEY: ChannelParameter(
          type=standard_artifacts.ModelRun),
  }


class EmbeddingTrainer(base_component.BaseComponent):
  """Learns token embeddings with skip-gram and negative sampling.

  Skip-gram over the `train` split's token sequences (context window with
  word2vec's reduced windows, frequent-token subsampling, negatives from the
  unigram^0.75 distribution of the vocabulary counts), one `tokens` table
  with tied target/context vectors. On a TPU it trains with
  `tf.tpu.experimental.embedding.TPUEmbedding`; on CPU with
  `TPUEmbeddingForServing` and the embedding optimizer's own update rule, so
  both write the same checkpoint (tables and optimizer slots) and either can
  resume the other.

  Args:
    examples: `Examples` with a `train` split (bytes feature `tokens`).
    vocabulary: the `Vocabulary` artifact; row i of the table = line i.
    embedding_spec: an `EmbeddingSpec` (or its JSON) with the features
      target, context and negatives on one table, e.g. `skipgram_spec(...)`;
      a table vocabulary_size of 0 is set from the vocabulary.
    base_model: optional earlier `Model` to warm-start from (tables and
      slots; rows remapped by token when the vocabulary changed).
    batch_size: (target, context) pairs per step (global batch on TPU).
    train_steps: total steps; 0 = run `epochs` passes over the data.
    epochs: passes over the data (0 = endless, train_steps must be set).
    window: maximum context distance.
    negatives: negatives per pair.
    subsample: word2vec subsampling threshold (0 = off).
    checkpoint_every: steps between checkpoints (a rerun resumes from the
      latest one).
    log_every: steps between progress lines and TensorBoard points.
    tpu: "" for CPU, "auto" for a TPU when the environment names one, or a
      TPU name / grpc:// address (unreachable = error, never CPU).
    seed: seed of initial values and of the input pipeline.
    warm_start_uri: URI of an earlier Model artifact, the same as
      `base_model` for drivers that cannot pass a channel.
    warm_start_push_root: without base_model / warm_start_uri, warm start
      from the model the pusher's latest version came from (its manifest's
      `source_model`), read when the trainer runs; no pushed version, a
      vanished source or an incompatible spec means a logged cold start.
      This is how a recurring Kubeflow run warm-starts without a Resolver.
  """

  SPEC_CLASS = EmbeddingTrainerSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self,
               examples: types.BaseChannel,
               vocabulary: types.BaseChannel,
               embedding_spec: Union[EmbeddingSpec, str],
               base_model: Optional[types.BaseChannel] = None,
               batch_size: int = _DEFAULTS.batch_size,
               train_steps: int = _DEFAULTS.train_steps,
               epochs: int = _DEFAULTS.epochs,
               window: int = _DEFAULTS.window,
               negatives: int = _DEFAULTS.negatives,
               subsample: float = _DEFAULTS.subsample,
               checkpoint_every: int = _DEFAULTS.checkpoint_every,
               log_every: int = _DEFAULTS.log_every,
               tpu: str = _DEFAULTS.tpu,
               seed: int = _DEFAULTS.seed,
               warm_start_uri: str = _DEFAULTS.warm_start_uri,
               warm_start_push_root: str = _DEFAULTS.warm_start_push_root):
    if isinstance(embedding_spec, EmbeddingSpec):
      embedding_spec = embedding_spec.to_json()
    else:
      EmbeddingSpec.from_json(embedding_spec)  # fail at pipeline build time
    config = executor.TrainerConfig(
        embedding_spec=embedding_spec, batch_size=batch_size,
        train_steps=train_steps, epochs=epochs, window=window,
        negatives=negatives, subsample=float(subsample),
        checkpoint_every=checkpoint_every, log_every=log_every, tpu=tpu,
        seed=seed, warm_start_uri=warm_start_uri,
        warm_start_push_root=warm_start_push_root)
    config.skipgram_config().validate()
    config.loop_config().validate()
    super().__init__(spec=EmbeddingTrainerSpec(
        examples=examples,
        vocabulary=vocabulary,
        base_model=base_model,
        embedding_spec=embedding_spec,
        batch_size=batch_size,
        train_steps=train_steps,
        epochs=epochs,
        window=window,
        negatives=negatives,
        subsample=float(subsample),
        checkpoint_every=checkpoint_every,
        log_every=log_every,
        tpu=tpu,
        seed=seed,
        warm_start_uri=warm_start_uri,
        warm_start_push_root=warm_start_push_root,
        model=types.Channel(type=standard_artifacts.Model),
        model_run=types.Channel(type=standard_artifacts.ModelRun)))
