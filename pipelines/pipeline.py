"""create_pipeline(): corpus -> vocabulary -> train -> validate -> export -> push."""

import dataclasses
from typing import Any, Dict, List, Optional

from tfx.orchestration import pipeline as tfx_pipeline

from components.corpus_example_gen.component import corpus_example_gen
from components.exporter.component import EmbeddingExporter
from components.pusher.component import EmbeddingPusher
from components.trainer.component import EmbeddingTrainer
from components.validator.component import CheckpointValidator
from components.vocabulary.component import Vocabulary
from pipelines.config import PIPELINE_NAME
from pipelines.config import PipelineConfig

def create_components(data_root: str, push_root: str, config: PipelineConfig,
                      warm_start_uri: str = '') -> List[Any]:
  """The six components, wired; shared by the local and Kubeflow runners."""
  example_gen = corpus_example_gen(data_root, pattern=config.input_pattern,
                                   span_window=config.span_window)
  vocabulary = Vocabulary(examples=example_gen.outputs['examples'],
                          min_count=config.min_count,
                          max_tokens=config.max_tokens)
  trainer = EmbeddingTrainer(
      examples=example_gen.outputs['examples'],
      vocabulary=vocabulary.outputs['vocabulary'],
      embedding_spec=config.embedding_spec().to_json(),
      batch_size=config.batch_size,
      train_steps=config.train_steps,
      epochs=config.epochs,
      window=config.window,
      negatives=config.negatives,
      subsample=config.subsample,
      checkpoint_every=config.checkpoint_every,
      tpu=config.tpu,
      seed=config.seed,
      warm_start_uri=warm_start_uri,
      warm_start_push_root=push_root if config.warm_start_from_pushed else '')
  validator = CheckpointValidator(
      model=trainer.outputs['model'],
      examples=example_gen.outputs['examples'],
      vocabulary=vocabulary.outputs['vocabulary'],
      push_root=push_root,
      k=config.k,
      window=config.window,
      num_negatives=config.negatives,
      related_pairs_file=config.related_pairs_file,
      similarity_file=config.similarity_file,
      min_recall_at_k=config.min_recall_at_k,
      max_eval_loss=(config.max_eval_loss if config.max_eval_loss is not None
                     else config.untrained_loss_limit()),
      min_related_recall_at_k=config.min_related_recall_at_k,
      regression_margin=config.regression_margin,
      seed=config.seed)
  exporter = EmbeddingExporter(model=trainer.outputs['model'])
  pusher = EmbeddingPusher(
      serving_model=exporter.outputs['serving_model'],
      hub_module=exporter.outputs['hub_module'],
      model_blessing=validator.outputs['blessing'],
      push_root=push_root,
      keep_versions=config.keep_versions)
  return [example_gen, vocabulary, trainer, validator, exporter, pusher]


def create_pipeline(pipeline_root: str,
                    data_root: str,
                    push_root: str,
                    config: Optional[PipelineConfig] = None,
                    pipeline_name: str = PIPELINE_NAME,
                    metadata_connection_config=None,
                    beam_pipeline_args: Optional[List[str]] = None,
                    warm_start_uri: str = '',
                    enable_cache: bool = True) -> tfx_pipeline.Pipeline:
  """The TFX pipeline; caching on, so an unchanged span reruns nothing."""
  config = config or PipelineConfig()
  return tfx_pipeline.Pipeline(
      pipeline_name=pipeline_name,
      pipeline_root=pipeline_root,
      components=create_components(data_root, push_root, config,
                                   warm_start_uri),
      enable_cache=enable_cache,
      metadata_connection_config=metadata_connection_config,
      beam_pipeline_args=beam_pipeline_args or [])


def config_summary(config: PipelineConfig) -> Dict[str, Any]:
  return dataclasses.asdict(config)
