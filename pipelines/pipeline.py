"""create_pipeline(): corpus -> vocabulary -> train -> validate -> export ->
push."""

import os
from typing import Any, List, Optional

from tfx.orchestration import pipeline as tfx_pipeline

from components import keys
from components.corpus_example_gen.component import corpus_example_gen
from components.exporter.component import EmbeddingExporter
from components.pusher.component import EmbeddingPusher
from components.trainer.component import EmbeddingTrainer
from components.validator.component import CheckpointValidator
from components.vocabulary.component import VocabularyGen
from pipelines import model_contract
from pipelines import model_settings
from pipelines import stock_example_gen
from pipelines.config import PIPELINE_NAME
from pipelines.config import PipelineConfig


def _example_gen(data_root: str, config: PipelineConfig):
  if config.example_gen.format == 'text':
    return corpus_example_gen(data_root, config.example_gen)
  return stock_example_gen.stock_example_gen(data_root, config.example_gen)


def create_components(data_root: str, push_root: str, config: PipelineConfig,
                      warm_start_uri: str = '',
                      resume_root: str = '',
                      module_file: str = '',
                      served_baseline: str = '') -> List[Any]:
  """The six components, wired; shared by the local and Kubeflow runners.

  `resume_root`: where the trainer notes what it is training, so that a rerun
  after a crash continues the interrupted training (see resume_root_for).
  `module_file`: the model's module file ('' = skip-gram); its FEATURES set
  the vocabularies counted. `served_baseline`: what the push root serves
  as the run starts (`tpu_embeddings.push_root.served.key`; the local
  runner sets it), part of the validator's cache key.
  """
  config.check_local_files()
  config = model_settings.for_module(config, module_file)
  example_gen = _example_gen(data_root, config)
  # Node id `Vocabulary`, as before the component was named VocabularyGen:
  # homes, ML Metadata contexts and Kubeflow task names keep it.
  vocabulary = VocabularyGen(examples=example_gen.outputs[keys.EXAMPLES],
                             config=config.vocabulary).with_id('Vocabulary')
  trainer_config = model_contract.trainer_settings(config, module_file)
  if warm_start_uri:
    trainer_config = trainer_config.replace(warm_start_uri=warm_start_uri)
  trainer = EmbeddingTrainer(
      examples=example_gen.outputs[keys.EXAMPLES],
      vocabulary=vocabulary.outputs[keys.VOCABULARY],
      push_root=push_root, resume_root=resume_root,
      module_file=os.path.abspath(module_file) if module_file else '',
      config=trainer_config)
  validator = CheckpointValidator(
      model=trainer.outputs[keys.MODEL],
      examples=example_gen.outputs[keys.EXAMPLES],
      vocabulary=vocabulary.outputs[keys.VOCABULARY],
      push_root=push_root, config=config.validator,
      served_baseline=served_baseline)
  # Export only what the validator blessed: a refused model may not even
  # be exportable (NaN rows fail the exports' load check).
  exporter = EmbeddingExporter(model=trainer.outputs[keys.MODEL],
                               model_blessing=validator.outputs[keys.BLESSING],
                               config=config.exporter)
  pusher = EmbeddingPusher(
      serving_model=exporter.outputs[keys.SERVING_MODEL],
      hub_module=exporter.outputs[keys.HUB_MODULE],
      model_blessing=validator.outputs[keys.BLESSING],
      push_root=push_root, config=config.pusher)
  return [example_gen, vocabulary, trainer, validator, exporter, pusher]


def resume_root_for(pipeline_root: str) -> str:
  """The trainer's resume pointers: one stable folder per pipeline root."""
  return f'{pipeline_root.rstrip("/")}/EmbeddingTrainer/resume'


def create_pipeline(pipeline_root: str,
                    data_root: str,
                    push_root: str,
                    config: Optional[PipelineConfig] = None,
                    pipeline_name: str = PIPELINE_NAME,
                    metadata_connection_config=None,
                    beam_pipeline_args: Optional[List[str]] = None,
                    warm_start_uri: str = '',
                    enable_cache: bool = True,
                    module_file: str = '',
                    served_baseline: str = '') -> tfx_pipeline.Pipeline:
  """The TFX pipeline; caching on, so an unchanged span reruns nothing."""
  config = config or PipelineConfig()
  return tfx_pipeline.Pipeline(
      pipeline_name=pipeline_name,
      pipeline_root=pipeline_root,
      components=create_components(data_root, push_root, config,
                                   warm_start_uri,
                                   resume_root_for(pipeline_root),
                                   module_file, served_baseline),
      enable_cache=enable_cache,
      metadata_connection_config=metadata_connection_config,
      beam_pipeline_args=beam_pipeline_args or [])
