"""EmbeddingTrainer executor: checks everything, then trains on CPU or TPU.

1. The module (a module file, else the built-in skip-gram), parameters,
   spec, vocabularies, Examples and the base model are checked and the
   device is resolved (and a TPU connected) before anything is written.
2. The output Model gets `embedding_spec.json` (vocabularies and sizes
   set), the vocabularies and the module's source (`user_module.py`); a
   rerun on the same output checks they still match.
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
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf
from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import keys
from components import module_file
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.models import module_files
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import checkpoints
from tpu_embeddings.training import corpus_scaling
from tpu_embeddings.training import cpu_adapter
from tpu_embeddings.training import dense_model
from tpu_embeddings.training import device
from tpu_embeddings.training import kept
from tpu_embeddings.training import learning_rate
from tpu_embeddings.training import model_inputs
from tpu_embeddings.training import model_output
from tpu_embeddings.training import resume
from tpu_embeddings.training import tensorboard_logs
from tpu_embeddings.training import tpu_adapter
from tpu_embeddings.training import training_loop
from tpu_embeddings.training import warm_start
from tpu_embeddings.training.config import TrainerConfig


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


@dataclasses.dataclass
class _Run:
  """One training run's checked inputs."""
  args: TrainerArgs
  config: TrainerConfig
  module: ModelModule
  ctx: ModelContext
  spec: EmbeddingSpec
  vocabularies: vocabularies_lib.Vocabularies
  scaling: Optional[corpus_scaling.Scaling] = None

  @property
  def uris(self) -> List[str]:
    return [a.uri for a in self.args.examples]


def _base_model(run: _Run) -> Tuple[str, List[Dict[str, Any]]]:
  """(the model to warm-start from or '', the pushed versions passed over)."""
  args, config, spec = run.args, run.config, run.spec
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


def _adapter(run: _Run):
  """(the CPU or TPU adapter, its learning-rate decay), inputs checked."""
  choice = device.choose(run.config.tpu)
  model_inputs.check(run.module, run.ctx)
  decay = learning_rate.LinearDecay(
      model_inputs.planned_steps(run.module, run.ctx, run.config))
  if decay.total_steps:
    logging.info('Learning rate decays linearly over %d steps',
                 decay.total_steps)
  tf.random.set_seed(run.config.seed)  # initial table and dense values
  if choice.kind == 'tpu':
    strategy = device.connect(choice)
    run.ctx.num_replicas = strategy.num_replicas_in_sync
    return tpu_adapter.TpuAdapter(run.spec, run.module, run.ctx, strategy,
                                  decay), decay
  return cpu_adapter.CpuAdapter(run.spec, run.module, run.ctx, decay), decay


def _start_output(run: _Run, base: str, key: str, element_spec):
  """Writes the spec, vocabularies and module, adopts an interrupted run's
  checkpoint or warm-starts; (the adopted run or None, the warm-start
  report)."""
  args = run.args
  model_output.write_inputs(args.model_uri, run.spec, run.vocabularies,
                            run.module)
  kept.write_owner(args.model_uri, key)
  resumed = resume.adopt(args.resume_root, key, args.model_uri, run.spec)
  warm = resumed.warm_start if resumed else None
  if base and checkpoints.latest(args.model_uri) is None:
    report = warm_start.write_initial_checkpoint(
        base, run.spec, run.vocabularies, args.model_uri, run.config.seed,
        dense_model.warm_start(run.module, run.ctx, run.spec, element_spec))
    logging.info('Warm start from %s: %d tokens kept, %d new, %d dropped%s',
                 base, report.kept_tokens, report.new_tokens,
                 report.dropped_tokens,
                 f'; dense model {report.dense}' if report.dense else '')
    warm = report.to_dict()
  if args.resume_root:
    resume.claim(args.resume_root, key, args.model_uri, warm)
  return resumed, warm


def _prepare(args: TrainerArgs, config: TrainerConfig,
             module: ModelModule) -> _Run:
  """Every input read and checked; nothing written yet."""
  if not args.examples:
    raise ValueError('EmbeddingTrainer: no Examples artifact given')
  if (not module.declared('SPEC_FROM_SETTINGS') and
      config.embedding_spec.strip()):
    raise ValueError(
        f'EmbeddingTrainer: trainer.embedding_spec is skip-gram\'s; module '
        f'file {module.path} defines its spec in embedding_spec(ctx)')
  vocabularies = vocabularies_lib.read(args.vocabulary_uri)
  for artifact in args.examples:
    examples_io.split_files(artifact.uri, keys.TRAIN_SPLIT)
  config, scaling = corpus_scaling.apply(config, module, vocabularies)
  if scaling:
    logging.info('EmbeddingTrainer: %s',
                 corpus_scaling.summary_line(scaling.to_dict()))
  ctx = model_inputs.context(module, config, vocabularies,
                             [a.uri for a in args.examples])
  spec = model_inputs.resolve_spec(module, ctx)
  return _Run(args, config, module, ctx, spec, vocabularies, scaling)


def _metadata(run: _Run, result: training_loop.LoopResult, adapter,
              decay: learning_rate.LinearDecay, **outcome) -> Dict[str, Any]:
  """metadata.json: the run's results, settings and `outcome` (warm start,
  resume)."""
  metadata = {
      'steps': result.steps,
      'examples_seen': result.examples_seen,
      'final_loss': result.final_loss,
      'spans': model_output.spans(run.args.examples, keys.SPAN),
      'device': adapter.device,
      'optimizer': run.spec.optimizer.kind,
      model_layout.DENSE_MODEL_KEY: adapter.model is not None,
      **model_output.kernels(*adapter.kernels),
      **model_output.model_figures(run.spec, run.vocabularies, run.module),
      'resumed_from_step': result.start_step,
      'steps_this_run': result.steps_this_run,
      'learning_rate_decay_steps': decay.total_steps,
      'examples_per_sec': result.examples_per_sec,
      corpus_scaling.METADATA_KEY: (run.scaling.to_dict() if run.scaling
                                    else None),
      'checkpoint': os.path.basename(result.checkpoint or ''),
      **outcome,
      'trained_at': model_output.now(),
      model_layout.TRAINER_CONFIG_KEY: dataclasses.asdict(run.config),
  }
  metadata.update(module_files.recorded(run.module))
  if run.module.features:
    metadata[model_layout.FEATURE_KINDS_KEY] = dict(run.ctx.feature_kinds)
  return metadata


def train(args: TrainerArgs, config: TrainerConfig,
          module: Optional[ModelModule] = None) -> Dict[str, Any]:
  """Everything the executor does; returns the metadata written."""
  run = _prepare(args, config, module or module_files.builtin())
  base, warm_start_skipped = _base_model(run)
  model_output.check_rerun(args.model_uri, run.spec, run.vocabularies,
                           run.module)
  logs = tensorboard_logs.RunLogs.create(
      args.model_run_uri, config, run.spec, run.vocabularies, run.module,
      model_inputs.heldout_pairs(run.module, run.ctx), ctx=run.ctx,
      model_uri=args.model_uri)
  key = resume.resume_key(args.examples, keys.TRAIN_SPLIT, run.vocabularies,
                          base, config, run.module.sha256)
  kept.check_owner(args.model_uri, key)
  adapter, decay = _adapter(run)
  input_fn = model_inputs.input_factory(run.module, run.spec, run.ctx,
                                        config.passes)
  element_spec = model_inputs.element_spec(input_fn)
  # Inputs are good: from here on the output is written.
  resumed, warm = _start_output(run, base, key, element_spec)
  result = training_loop.run(adapter, run.spec, input_fn, element_spec,
                             args.model_uri, logs, config, decay.total_steps)
  metadata = _metadata(
      run, result, adapter, decay, warm_start=warm,
      warm_start_skipped=warm_start_skipped,
      resumed_from=resumed.model_uri if resumed else None,
      resume_key=key or None)
  model_layout.write_metadata(args.model_uri, metadata)
  if args.resume_root:
    resume.release(args.resume_root, key, args.model_uri)
    kept.discard(args.resume_root, key)
  logging.info('EmbeddingTrainer done: %d steps on %s with %s, final loss %s',
               result.steps, adapter.device,
               model_output.summary(*adapter.kernels), result.final_loss)
  return metadata


class Executor(base_executor.BaseExecutor):
  """Trains a module file's model (default: skip-gram) on CPU or TPU."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    self._log_startup(input_dict, output_dict, exec_properties)
    config = TrainerConfig.from_exec_properties(
        exec_properties, wiring=[keys.PUSH_ROOT, keys.RESUME_ROOT,
                                 module_file.MODULE_FILE_KEY,
                                 module_file.MODULE_PATH_KEY,
                                 keys.MODULE_SOURCE_FILE])
    module = module_file.from_exec_properties(exec_properties)
    model = artifact_utils.get_single_instance(output_dict[keys.MODEL])
    args = TrainerArgs.from_tfx(input_dict, output_dict, exec_properties)
    with kept.kept_on_failure(args.resume_root, args.model_uri):
      metadata = train(args, config, module)
    model.set_int_custom_property('steps', metadata['steps'])
    model.set_string_custom_property('device', metadata['device'])
