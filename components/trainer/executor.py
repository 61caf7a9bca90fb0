"""EmbeddingTrainer executor: checks everything, then trains on CPU or TPU.

1. Parameters, spec, vocabulary, Examples and the base model are checked and
   the device is resolved (and a TPU connected) before anything is written.
2. The output Model gets `embedding_spec.json` (vocabulary size set) and
   `vocabulary.tsv`; a rerun on the same output checks they still match.
3. Without a checkpoint in the output and with a base model, the warm-start
   checkpoint (step 0) is written first.
4. Without a checkpoint in the output, a rerun of an interrupted training
   (same inputs and settings) continues from its checkpoint (resume.py).
5. The training loop restores the latest checkpoint and trains.
6. `metadata.json` is written last: a Model without it is incomplete.
"""

import dataclasses
import os
import time
from typing import Any, Dict, List

import tensorflow as tf
from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import keys
from components.trainer import checkpoints
from components.trainer import cpu_adapter
from components.trainer import device
from components.trainer import learning_rate
from components.trainer import resume
from components.trainer import tensorboard_logs
from components.trainer import tpu_adapter
from components.trainer import training_loop
from components.trainer import warm_start
from components.trainer.config import TrainerConfig
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models import skipgram
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.spec.embedding_spec import skipgram_tables


def resolve_spec(spec: EmbeddingSpec,
                 vocabulary: vocabulary_file.TokenCounts) -> EmbeddingSpec:
  """The spec with its tables sized from the vocabulary, checked."""
  skipgram_tables(spec)
  for table in spec.tables:
    if table.vocabulary_size == 0:
      spec = spec.with_vocabulary_size(table.name, len(vocabulary))
    elif table.vocabulary_size != len(vocabulary):
      raise ValueError(
          f'embedding_spec: table {table.name!r} has vocabulary_size '
          f'{table.vocabulary_size} but the vocabulary has {len(vocabulary)} '
          'tokens; set it to 0 to size it from the vocabulary')
  # Fail here, not mid-training, on optimizer options TF itself rejects.
  spec.build_optimizer()
  return spec


def examples_spans(examples: List[types.Artifact]) -> List[int]:
  spans = set()
  for artifact in examples:
    if artifact.has_custom_property(keys.SPAN):
      spans.add(int(artifact.get_int_custom_property(keys.SPAN)))
    elif artifact.has_property(keys.SPAN):
      spans.add(int(getattr(artifact, keys.SPAN)))
  return sorted(spans)


def sequences_of(examples: List[types.Artifact],
                 split: str = keys.TRAIN_SPLIT) -> tf.data.Dataset:
  datasets = [examples_io.token_dataset(a.uri, split) for a in examples]
  ds = datasets[0]
  for other in datasets[1:]:
    ds = ds.concatenate(other)
  return ds


def check_pairs(data: skipgram.SkipGramData, examples: List[types.Artifact]):
  """The train split, and the eval split the validator scores on (where
  there is one), must give skip-gram pairs: else training never ends or the
  model is trained only to be refused."""
  for split in (keys.TRAIN_SPLIT, keys.EVAL_SPLIT):
    present = [a for a in examples if split == keys.TRAIN_SPLIT or tf.io.gfile.glob(
        f'{a.uri.rstrip("/")}/Split-{split}/*')]
    if present and not data.yields_pairs(sequences_of(present, split)):
      raise ValueError(
          f'examples {", ".join(a.uri for a in present)}: split {split!r} '
          'gives no skip-gram pairs: it is empty, or no sequence keeps two '
          'in-vocabulary tokens after subsampling (subsample='
          f'{data.config.subsample}, window={data.config.window}); use more '
          'varied data or a lower subsample')


def planned_steps(data: skipgram.SkipGramData, sequences: tf.data.Dataset,
                  config: TrainerConfig) -> int:
  """The steps the learning rate decays over: `train_steps`, or the expected
  steps of `epochs` passes, whichever ends first; 0 without decay."""
  if not config.learning_rate_decay:
    return 0
  steps = [config.train_steps] if config.train_steps else []
  if config.epochs:
    pairs = config.epochs * data.pairs_per_epoch(sequences)
    steps.append(max(1, int(pairs // config.batch_size)))
  return min(steps)


def _check_rerun(model_uri: str, spec: EmbeddingSpec,
                 vocabulary: vocabulary_file.TokenCounts):
  """A rerun on the same output must train the same spec and vocabulary."""
  path = model_layout.join(model_uri, 'embedding_spec.json')
  if tf.io.gfile.exists(path) and EmbeddingSpec.load(model_uri) != spec:
    raise ValueError(
        f'model {model_uri} holds a checkpoint of another embedding spec; '
        'use a new output or the same embedding_spec')
  if tf.io.gfile.exists(model_layout.join(
      model_uri, vocabulary_file.VOCABULARY_FILENAME)):
    if vocabulary_file.read(model_uri) != vocabulary:
      raise ValueError(
          f'model {model_uri} holds a checkpoint of another vocabulary; use a '
          'new output or the same vocabulary')


def train(examples: List[types.Artifact], vocabulary_uri: str,
          model_uri: str, model_run_uri: str, config: TrainerConfig,
          base_model_uri: str = '', push_root: str = '',
          resume_root: str = '') -> Dict[str, Any]:
  """Everything the executor does; returns the metadata written."""
  if not examples:
    raise ValueError('EmbeddingTrainer: no Examples artifact given')
  vocabulary = vocabulary_file.read(vocabulary_uri)
  spec = resolve_spec(config.spec(), vocabulary)
  data = skipgram.SkipGramData(vocabulary.tokens, vocabulary.counts, config)
  for artifact in examples:
    examples_io.split_files(artifact.uri, keys.TRAIN_SPLIT)
  base = base_model_uri or config.warm_start_uri
  if (base_model_uri and config.warm_start_uri and
      base_model_uri.rstrip('/') != config.warm_start_uri.rstrip('/')):
    raise ValueError(
        f'EmbeddingTrainer: base_model ({base_model_uri}) and warm_start_uri '
        f'({config.warm_start_uri}) disagree; give one of them')
  warm_start_skipped = []
  if not base and config.warm_start_from_pushed and push_root:
    # Checked there: compatible and readable, else passed over.
    base, warm_start_skipped = warm_start.pushed_base(push_root, spec)
  elif base:
    base_spec = EmbeddingSpec.load(base)
    warm_start.check_compatible(spec, base_spec, base)
    warm_start.check_readable(base, spec)
  _check_rerun(model_uri, spec, vocabulary)
  logs = tensorboard_logs.RunLogs.create(model_run_uri, config, spec,
                                         vocabulary, [a.uri for a in examples])
  key = (resume.resume_key(examples, keys.TRAIN_SPLIT, vocabulary, base, config)
         if resume_root else '')

  choice = device.choose(config.tpu)
  check_pairs(data, examples)
  decay = learning_rate.LinearDecay(
      planned_steps(data, sequences_of(examples), config))
  if decay.total_steps:
    logging.info('Learning rate decays linearly over %d steps',
                 decay.total_steps)
  tf.random.set_seed(config.seed)  # initial table values
  if choice.kind == 'tpu':
    strategy = device.connect(choice)
    adapter = tpu_adapter.TpuAdapter(spec, config.batch_size,
                                     config.negatives, strategy, decay)
  else:
    adapter = cpu_adapter.CpuAdapter(spec, config.batch_size, decay)

  # Inputs are good: from here on the output is written.
  spec.save(model_uri)
  vocabulary_file.write(model_uri, vocabulary)
  resumed = resume.adopt(resume_root, key, model_uri, spec)
  warm = resumed.warm_start if resumed else None
  if base and checkpoints.latest(model_uri) is None:
    report = warm_start.write_initial_checkpoint(
        base, spec, vocabulary, model_uri, config.seed)
    logging.info('Warm start from %s: %d tokens kept, %d new, %d dropped',
                 base, report.kept_tokens, report.new_tokens,
                 report.dropped_tokens)
    warm = report.to_dict()
  if resume_root:
    resume.claim(resume_root, key, model_uri, warm)
  result = training_loop.run(
      adapter, spec, data, sequences_of(examples), model_uri, logs, config)
  metadata = {
      'steps': result.steps,
      'examples_seen': result.examples_seen,
      'final_loss': result.final_loss,
      'spans': examples_spans(examples),
      'device': adapter.device,
      'optimizer': spec.optimizer.kind,
      'dim': spec.table(skipgram_tables(spec)[0]).dim,
      'vocabulary_size': len(vocabulary),
      'resumed_from_step': result.start_step,
      'steps_this_run': result.steps_this_run,
      'learning_rate_decay_steps': decay.total_steps,
      'examples_per_sec': result.examples_per_sec,
      'checkpoint': os.path.basename(result.checkpoint or ''),
      'warm_start': warm,
      'warm_start_skipped': warm_start_skipped,
      'resumed_from': resumed.model_uri if resumed else None,
      'resume_key': key or None,
      'trained_at': int(time.time()),
      model_layout.TRAINER_CONFIG_KEY: dataclasses.asdict(config),
  }
  model_layout.write_metadata(model_uri, metadata)
  if resume_root:
    resume.release(resume_root, key, model_uri)
  logging.info('EmbeddingTrainer done: %d steps on %s, final loss %s',
               result.steps, adapter.device, result.final_loss)
  return metadata


class Executor(base_executor.BaseExecutor):
  """Trains token embeddings with skip-gram on CPU or TPU."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    self._log_startup(input_dict, output_dict, exec_properties)
    config = TrainerConfig.from_exec_properties(exec_properties,
                                                wiring=[keys.PUSH_ROOT,
                                                        keys.RESUME_ROOT])
    vocabulary = artifact_utils.get_single_uri(input_dict[keys.VOCABULARY])
    base_models = input_dict.get(keys.BASE_MODEL) or []
    if len(base_models) > 1:
      raise ValueError('EmbeddingTrainer: give at most one base_model')
    model = artifact_utils.get_single_instance(output_dict[keys.MODEL])
    model_run = artifact_utils.get_single_instance(output_dict[keys.MODEL_RUN])
    metadata = train(input_dict[keys.EXAMPLES], vocabulary, model.uri,
                     model_run.uri, config,
                     base_models[0].uri if base_models else '',
                     exec_properties.get(keys.PUSH_ROOT) or '',
                     exec_properties.get(keys.RESUME_ROOT) or '')
    model.set_int_custom_property('steps', metadata['steps'])
    model.set_string_custom_property('device', metadata['device'])
