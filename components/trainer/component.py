"""TFX component `EmbeddingTrainer`: skip-gram token embeddings, CPU or TPU.

    trainer = EmbeddingTrainer(
        examples=example_gen.outputs['examples'],
        vocabulary=vocabulary_gen.outputs['vocabulary'],
        embedding_spec=skipgram_spec(dim=64, optimizer='adagrad',
                                     learning_rate=0.05),
        batch_size=1024, train_steps=20_000, tpu='auto')
    trainer.outputs['model']      # checkpoint + spec + vocabulary + metadata
    trainer.outputs['model_run']  # TensorBoard: curves, hparams, projector
"""

from typing import Optional, Union

from tfx import types
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components import artifact_types
from components import keys
from components.trainer import executor
from components.trainer.config import TrainerConfig
from tpu_embeddings.core import settings
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


class EmbeddingTrainerSpec(types.ComponentSpec):
  """Inputs, parameters and outputs of EmbeddingTrainer."""
  PARAMETERS = {
      settings.CONFIG_KEY: ExecutionParameter(type=str),
      keys.PUSH_ROOT: ExecutionParameter(type=str, optional=True),
      keys.RESUME_ROOT: ExecutionParameter(type=str, optional=True),
  }
  INPUTS = {
      keys.EXAMPLES: ChannelParameter(type=standard_artifacts.Examples),
      keys.VOCABULARY: ChannelParameter(
          type=artifact_types.Vocabulary),
      keys.BASE_MODEL: ChannelParameter(
          type=standard_artifacts.Model, optional=True),
  }
  OUTPUTS = {
      keys.MODEL: ChannelParameter(type=standard_artifacts.Model),
      keys.MODEL_RUN: ChannelParameter(
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
  resume the other. `metadata.json` in the Model holds the results and the
  settings (`trainer_config`).

  Args:
    examples: `Examples` with a `train` split (bytes feature `tokens`).
    vocabulary: the `Vocabulary` artifact; row i of the table = line i.
    embedding_spec: an `EmbeddingSpec` (or its JSON) with the features
      target, context and negatives on one table, e.g. `skipgram_spec(...)`;
      the same as `config.embedding_spec`.
    base_model: optional earlier `Model` to warm-start from (tables and
      slots; rows remapped by token when the vocabulary changed).
    push_root: the pusher's destination, read for
      `config.warm_start_from_pushed`.
    resume_root: a stable folder (same for every run of the pipeline) where
      the trainer notes the output it is training; a rerun on the same inputs
      and settings after a crash continues from that output's newest intact
      checkpoint (components/trainer/resume.py). '' = never resume there.
    config: a `TrainerConfig`; `**settings` override its fields by name.
  """

  SPEC_CLASS = EmbeddingTrainerSpec
  EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

  def __init__(self,
               examples: types.BaseChannel,
               vocabulary: types.BaseChannel,
               embedding_spec: Optional[Union[EmbeddingSpec, str]] = None,
               base_model: Optional[types.BaseChannel] = None,
               push_root: str = '',
               resume_root: str = '',
               config: Optional[TrainerConfig] = None,
               **settings_by_name):
    if isinstance(embedding_spec, EmbeddingSpec):
      settings_by_name['embedding_spec'] = embedding_spec.to_json()
    elif embedding_spec is not None:
      settings_by_name['embedding_spec'] = embedding_spec
    # Checked here: bad settings fail when the pipeline is built.
    config = (config or TrainerConfig()).replace(**settings_by_name)
    super().__init__(spec=EmbeddingTrainerSpec(
        examples=examples,
        vocabulary=vocabulary,
        base_model=base_model,
        config=config.to_json(),
        push_root=push_root,
        resume_root=resume_root,
        model=types.Channel(type=standard_artifacts.Model),
        model_run=types.Channel(type=standard_artifacts.ModelRun)))
