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
A failure keeps the checkpoints for the rerun (kept.py).
"""

import dataclasses
import os
import time
from typing import Any, Dict, List, Sequence, Tuple

import tensorflow as tf
from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import keys
from components.trainer import checkpoints
from components.trainer import cpu_adapter
from components.trainer import device
from components.trainer import kept
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
from tpu_embeddings.models.skipgram_features import skipgram_tables
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


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
    present = [a for a in examples
               if split == keys.TRAIN_SPLIT or tf.io.gfile.glob(
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
  steps of `epochs` passes; 0 without decay."""
  if not config.learning_rate_decay:
    return 0
  if config.train_steps:
    return config.train_steps
  pairs = config.epochs * data.pairs_per_epoch(sequences)
  return max(1, int(pairs // config.batch_size))


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


@dataclasses.dataclass(frozen=True)
class TrainerArgs:
  """What one EmbeddingTrainer execution reads and writes, as TFX's FnArgs
  is for its Trainer: the artifacts' URIs and the wiring parameters."""
  examples: Sequence[types.Artifact]
  vocabulary_uri: str
  model_uri: str
  model_run_uri: str
  base_model_uri: str = ''
  push_root: str = ''
  resume_root: str = ''

  @classmethod
  def from_tfx(cls, input_dict: Dict[str, List[types.Artifact]],
               output_dict: Dict[str, List[types.Artifact]],
               exec_properties: Dict[str, Any]) -> 'TrainerArgs':
    base_models = input_dict.get(keys.BASE_MODEL) or []
    if len(base_models) > 1:
      raise ValueError('EmbeddingTrainer: give at most one base_model')
    return cls(
        examples=input_dict[keys.EXAMPLES],
        vocabulary_uri=artifact_utils.get_single_uri(
            input_dict[keys.VOCABULARY]),
        model_uri=artifact_utils.get_single_uri(output_dict[keys.MODEL]),
        model_run_uri=artifact_utils.get_single_uri(
            output_dict[keys.MODEL_RUN]),
        base_model_uri=base_models[0].uri if base_models else '',
        push_root=exec_properties.get(keys.PUSH_ROOT) or '',
        resume_root=exec_properties.get(keys.RESUME_ROOT) or '')


def _base_model(args: TrainerArgs, config: TrainerConfig,
                spec: EmbeddingSpec) -> Tuple[str, List[Dict[str, Any]]]:
  """(the model to warm-start from or '', the pushed versions passed over)."""
  base = args.base_model_uri or config.warm_start_uri
  if (args.base_model_uri and config.warm_start_uri and
      args.base_model_uri.rstrip('/') != config.warm_start_uri.rstrip('/')):
    raise ValueError(
        f'EmbeddingTrainer: base_model ({args.base_model_uri}) and '
        f'warm_start_uri ({config.warm_start_uri}) disagree; give one of them')
  if not base and config.warm_start_from_pushed and args.push_root:
    # Checked there: compatible and readable, else passed over.
    return warm_start.pushed_base(args.push_root, spec)
  if base:
    warm_start.check_compatible(spec, EmbeddingSpec.load(base), base)
    warm_start.check_readable(base, spec)
  return base, []


def _adapter(config: TrainerConfig, spec: EmbeddingSpec,
             data: skipgram.SkipGramData, examples: Sequence[types.Artifact]):
  """(the CPU or TPU adapter, its learning-rate decay), inputs checked."""
  choice = device.choose(config.tpu)
  check_pairs(data, examples)
  decay = learning_rate.LinearDecay(
      planned_steps(data, sequences_of(examples), config))
  if decay.total_steps:
    logging.info('Learning rate decays linearly over %d steps',
                 decay.total_steps)
  tf.random.set_seed(config.seed)  # initial table values
  if choice.kind == 'tpu':
    return tpu_adapter.TpuAdapter(spec, config.batch_size, config.negatives,
                                  device.connect(choice), decay), decay
  return cpu_adapter.CpuAdapter(spec, config.batch_size, decay), decay


def _start_output(args: TrainerArgs, config: TrainerConfig,
                  spec: EmbeddingSpec,
                  vocabulary: vocabulary_file.TokenCounts, base: str,
                  key: str):
  """Writes the spec and vocabulary, adopts an interrupted run's checkpoint
  or warm-starts; (the adopted run or None, the warm-start report)."""
  spec.save(args.model_uri)
  vocabulary_file.write(args.model_uri, vocabulary)
  kept.write_owner(args.model_uri, key)
  resumed = resume.adopt(args.resume_root, key, args.model_uri, spec)
  warm = resumed.warm_start if resumed else None
  if base and checkpoints.latest(args.model_uri) is None:
    report = warm_start.write_initial_checkpoint(
        base, spec, vocabulary, args.model_uri, config.seed)
    logging.info('Warm start from %s: %d tokens kept, %d new, %d dropped',
                 base, report.kept_tokens, report.new_tokens,
                 report.dropped_tokens)
    warm = report.to_dict()
  if args.resume_root:
    resume.claim(args.resume_root, key, args.model_uri, warm)
  return resumed, warm


def train(args: TrainerArgs, config: TrainerConfig) -> Dict[str, Any]:
  """Everything the executor does; returns the metadata written."""
  if not args.examples:
    raise ValueError('EmbeddingTrainer: no Examples artifact given')
  vocabulary = vocabulary_file.read(args.vocabulary_uri)
  spec = resolve_spec(config.spec(), vocabulary)
  data = skipgram.SkipGramData(vocabulary.tokens, vocabulary.counts, config)
  for artifact in args.examples:
    examples_io.split_files(artifact.uri, keys.TRAIN_SPLIT)
  base, warm_start_skipped = _base_model(args, config, spec)
  _check_rerun(args.model_uri, spec, vocabulary)
  logs = tensorboard_logs.RunLogs.create(
      args.model_run_uri, config, spec, vocabulary,
      [a.uri for a in args.examples])
  key = resume.resume_key(args.examples, keys.TRAIN_SPLIT, vocabulary, base,
                          config)
  kept.check_owner(args.model_uri, key)
  adapter, decay = _adapter(config, spec, data, args.examples)
  # Inputs are good: from here on the output is written.
  resumed, warm = _start_output(args, config, spec, vocabulary, base, key)
  result = training_loop.run(adapter, spec, data, sequences_of(args.examples),
                             args.model_uri, logs, config, decay.total_steps)
  metadata = {
      'steps': result.steps,
      'examples_seen': result.examples_seen,
      'final_loss': result.final_loss,
      'spans': examples_spans(args.examples),
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
  model_layout.write_metadata(args.model_uri, metadata)
  if args.resume_root:
    resume.release(args.resume_root, key, args.model_uri)
    kept.discard(args.resume_root, key)
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
    model = artifact_utils.get_single_instance(output_dict[keys.MODEL])
    args = TrainerArgs.from_tfx(input_dict, output_dict, exec_properties)
    with kept.kept_on_failure(args.resume_root, args.model_uri):
      metadata = train(args, config)
    model.set_int_custom_property('steps', metadata['steps'])
    model.set_string_custom_property('device', metadata['device'])
