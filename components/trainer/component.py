"""TFX component `EmbeddingTrainer`: a module file's model (default
skip-gram token embeddings) on the TPU embedding core, CPU or TPU.

    trainer = EmbeddingTrainer(
        examples=example_gen.outputs['examples'],
        vocabulary=vocabulary_gen.outputs['vocabulary'],
        module_file='two_tower.py',            # default: skip-gram
        batch_size=512, epochs=3, train_steps=0, tpu='auto')
    trainer.outputs['model']      # checkpoint + spec + vocabularies + module
    trainer.outputs['model_run']  # TensorBoard: curves, hparams, projector
"""

from typing import Optional, Union

from tfx import types
from tfx.components.util import udf_utils
from tfx.dsl.components.base import base_component
from tfx.dsl.components.base import executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter
from tfx.types.component_spec import ExecutionParameter

from components import artifact_types
from components import keys
from components import module_file as module_file_lib
from components import module_wheel
from components.trainer import executor
from tpu_embeddings.core import settings
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training.config import TrainerConfig


class EmbeddingTrainerSpec(types.ComponentSpec):
  """Inputs, parameters and outputs of EmbeddingTrainer."""
  PARAMETERS = {
      settings.CONFIG_KEY: ExecutionParameter(type=str),
      keys.PUSH_ROOT: ExecutionParameter(type=str, optional=True),
      keys.RESUME_ROOT: ExecutionParameter(type=str, optional=True),
      module_file_lib.MODULE_FILE_KEY: ExecutionParameter(
          type=str, optional=True),
      module_file_lib.MODULE_PATH_KEY: ExecutionParameter(
          type=str, optional=True),
      keys.MODULE_SOURCE_FILE: ExecutionParameter(type=str, optional=True),
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
  """Trains a module file's model, by default skip-gram token embeddings.

  With `module_file` (TFX's convention: a Python file defining the model,
  see tpu_embeddings/models/model_module.py) the module's features, tables,
  dense model and loss train on the same core; the module is shipped as TFX
  ships Trainer modules (a wheel beside the pipeline root on Kubeflow) and
  copied into the Model, so the validator and the exporter read the model
  with its own code.

  Without one: skip-gram over the `train` split's token sequences (context
  window with word2vec's reduced windows, frequent-token subsampling,
  negatives from the unigram^0.75 distribution of the vocabulary counts), one
  `tokens` table with tied target/context vectors. On a TPU it trains with
  `tf.tpu.experimental.embedding.TPUEmbedding`; on CPU with
  `TPUEmbeddingForServing` and the embedding optimizer's own update rule, so
  both write the same checkpoint (tables and optimizer slots) and either can
  resume the other. `metadata.json` in the Model holds the results and the
  settings (`trainer_config`).

  Args:
    examples: `Examples` with a `train` split (skip-gram: bytes feature
      `tokens`; a module file: its FEATURES).
    vocabulary: the `Vocabulary` artifact; row i of a table = line i of its
      vocabulary.
    embedding_spec: skip-gram only: an `EmbeddingSpec` (or its JSON) with
      the features target, context and negatives on one table, e.g.
      `skipgram_spec(...)`; the same as `config.embedding_spec`.
    base_model: optional earlier `Model` to warm-start from (tables and
      slots; rows remapped by token when the vocabulary changed).
    push_root: the pusher's destination, read for
      `config.warm_start_from_pushed`.
    resume_root: a stable folder (same for every run of the pipeline) where
      the trainer notes the output it is training; a rerun on the same inputs
      and settings after a crash continues from that output's newest intact
      checkpoint (tpu_embeddings/training/resume.py). '' = never resume there.
    module_file: path of the model's module file ('' = skip-gram).
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
               module_file: str = '',
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
        module_file=module_file or None,
        model=types.Channel(type=standard_artifacts.Model),
        model_run=types.Channel(type=standard_artifacts.ModelRun)))
    if module_file and udf_utils.should_package_user_modules():
      # Compiling for Kubeflow packages the module file, alone, as a wheel
      # under the pipeline root and replaces `module_file` by `module_path`,
      # as for TFX's Trainer; the local runner reads the file itself.
      module_wheel.add_module_file_wheel(self)
