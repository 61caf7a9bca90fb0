"""The embedded default: LocalDagRunner + SQLite ML Metadata + Beam
DirectRunner.

    <home>/metadata.sqlite   ML Metadata
    <home>/pipeline/         pipeline root (artifacts)
    <home>/pushed/           push root (serving/<v>/, hub/<v>/)

A run holds the home's lock (home_lock.py) from before it reads what the
push root serves until its pusher is done, and passes that served version to
the validator as part of its cache key: a verdict is reused only while the
version it was made against is still served.
"""

import contextlib
import datetime
import json
import logging as py_logging
import os
import sys
import time
import uuid
from typing import Any, Dict, List, Optional, TextIO

from absl import logging
from tfx.dsl.compiler import compiler
from tfx.dsl.compiler import constants
from tfx.orchestration import metadata
from tfx.orchestration.local.local_dag_runner import LocalDagRunner
from tfx.orchestration.portable import runtime_parameter_utils

from components import keys
from pipelines import model_settings
from pipelines import pipeline as pipeline_lib
from pipelines.local import csv_failure
from pipelines.local import failure
from pipelines.local import home as home_lib
from pipelines.local import home_lock
from pipelines.local import launches
from pipelines.local import metadata_queries
from pipelines.local import push_outcome
from pipelines.local import store_guard
from pipelines.local import summary_notes
from pipelines.local.progress_line import ProgressLine
from tpu_embeddings.push_root import served
from tpu_embeddings.training import corpus_scaling

# Beam options of the Beam components (ExampleGen, Vocabulary): none, i.e.
# DirectRunner in memory with one worker. Any option makes TFX package its own
# sources into an sdist for remote workers before each Beam component
# (useless in process); `--beam-arg` still passes options when wanted.
BEAM_ARGS = ()


def new_run_id() -> str:
  """A pipeline run id unique even for runs started in the same instant.

  LocalDagRunner's own id is the start time alone; two runs into one home
  could share it, and nothing would tell this run's executions apart.
  """
  return f'{datetime.datetime.now().isoformat()}-{uuid.uuid4().hex[:8]}'


def compile_run(pipeline, run_id: str):
  """The pipeline's IR with its pipeline-run-id parameter set to `run_id`."""
  ir = compiler.Compiler().compile(pipeline)
  runtime_parameter_utils.substitute_runtime_parameter(
      ir, {constants.PIPELINE_RUN_ID_PARAMETER_NAME: run_id})
  return ir


@contextlib.contextmanager
def _quiet_logs(verbose: bool):
  """Without --verbose, library logs are off: `launches` prints one line per
  component (progress_line the trainer's progress), and a failure is raised
  to the CLI, which prints one line (TFX would log each failed execution at
  ERROR level besides); with it, absl's INFO logs too (TFX's and the
  trainer's progress lines)."""
  quieted = []
  verbosity = logging.get_verbosity()
  if verbose:
    logging.set_verbosity(logging.INFO)
  else:
    for h in py_logging.getLogger().handlers + [logging.get_absl_handler()]:
      quieted.append((h, h.level))
      h.setLevel(max(h.level, py_logging.CRITICAL))
    tf_logger = py_logging.getLogger('tensorflow')
    quieted.append((tf_logger, tf_logger.level))
    tf_logger.setLevel(py_logging.CRITICAL)
  stopped = False
  try:
    yield
  except KeyboardInterrupt:
    # A stop: the process ends after its one line, and the run's objects
    # are deleted after that line (a checkpoint restore the stop cut short
    # would warn of its unrestored values): the logs stay quiet.
    stopped = True
    raise
  finally:
    if not stopped:
      logging.set_verbosity(verbosity)
      for h, level in quieted:
        h.setLevel(level)


def run(data_root: str,
        home: str,
        config: Optional[pipeline_lib.PipelineConfig] = None,
        warm_start_uri: str = '',
        beam_pipeline_args: Optional[List[str]] = None,
        out: Optional[TextIO] = None,
        verbose: bool = False,
        module_file: str = '') -> Dict[str, Any]:
  """Runs the pipeline locally and returns the summary dict (`module_file`:
  the model's module file, '' for skip-gram)."""
  out = out or sys.stdout
  if not os.path.isdir(data_root):
    raise FileNotFoundError(f'data root {data_root} is not a directory; '
                            'create it with `python -m pipelines demo-data`')
  p = home_lib.paths(home)
  config = config or pipeline_lib.PipelineConfig()
  related = os.path.join(data_root, 'related_pairs.tsv')
  if (not config.validator.related_pairs_file and os.path.exists(related)
      and model_settings.uses(module_file, 'validator.related_pairs_file')):
    config = config.replace(
        **{'validator.related_pairs_file': os.path.abspath(related)})

  def build(served_baseline: str):
    return pipeline_lib.create_pipeline(
        pipeline_root=p['pipeline_root'],
        data_root=os.path.abspath(data_root),
        push_root=p['push_root'],
        config=config,
        metadata_connection_config=(
            metadata.sqlite_metadata_connection_config(
                p['metadata'])),
        beam_pipeline_args=beam_pipeline_args or list(BEAM_ARGS),
        warm_start_uri=warm_start_uri, module_file=module_file,
        served_baseline=served_baseline)

  build('')  # bad settings fail before the home is touched
  os.makedirs(p['home'], exist_ok=True)
  # One run at a time in a home, from reading what is served to the push.
  with home_lock.HomeLock(p['home'], out):
    return _run_locked(p, build, out, verbose,
                       lambda e, progress: csv_failure.explain(
                           e, data_root, config, p['home'], progress))


def _run_locked(p: Dict[str, str], build, out: TextIO, verbose: bool,
                failed) -> Dict[str, Any]:
  """`run`, the home's lock held: the validator's cache key holds the
  version served now, so a verdict cached against another one is redone."""
  store_note = _pair_store(p['home'])
  pipeline = build(served.key(served.identity(p['push_root'])))
  start = time.monotonic()
  # Without --verbose the trainer's progress is shown on its own; with it,
  # it is among the logs.
  line = None if verbose else ProgressLine(out)
  progress = launches.Launches(out, line)
  # The run id is fixed here, so the summary reads this run's executions
  # even while another run writes to the same ML Metadata.
  run_id = new_run_id()
  try:
    with _quiet_logs(verbose), progress, line or contextlib.nullcontext():
      LocalDagRunner().run_with_ir(compile_run(pipeline, run_id))
  except BaseException as e:
    raise failed(e, progress) from e
  wall = time.monotonic() - start
  summary = summarize(p['home'], pipeline_lib.PIPELINE_NAME, run_id)
  summary['store_note'] = store_note
  resumed_from = (summary.get('training') or {}).get('resumed_from')
  if resumed_from:
    summary['interrupted_execution'] = metadata_queries.mark_interrupted(
        metadata_queries.open_store(p['home']), resumed_from, summary['model'])
  summary['timing'] = {
      'wall_seconds': round(wall, 1),
      'component_seconds': round(sum(progress.timings.values()), 1),
      'per_component': {k: round(v, 1) for k, v in progress.timings.items()},
  }
  return summary


def _pair_store(home: str) -> Optional[str]:
  """store_guard.check; a store it cannot write is named (failure.wrap)."""
  try:
    return store_guard.check(home)
  except Exception as e:
    raise failure.wrap(e, home, None, []) from e


def summarize(home: str, pipeline_name: str,
              run_id: Optional[str] = None) -> Dict[str, Any]:
  """Blessed or why not, pushed version, key metrics, paths: from MLMD.

  Of the run `run_id`, or without it of the pipeline's newest run.
  """
  store = metadata_queries.open_store(home)
  if run_id:
    outputs = metadata_queries.pipeline_run_outputs(store, run_id)
  else:
    outputs = metadata_queries.latest_run_outputs(store, pipeline_name)
  p = home_lib.paths(home)
  summary: Dict[str, Any] = {'paths': p, 'run_id': run_id}
  cp = metadata_queries.custom_property
  summary['cached'] = sorted(
      node for node, outs in outputs.items()
      if outs and all(o.cached for o in outs.values()))
  if 'CheckpointValidator' in outputs:
    blessing = outputs['CheckpointValidator']['blessing'].artifact
    summary['blessed'] = bool(cp(blessing, 'blessed'))
    report_path = os.path.join(blessing.uri, 'report.json')
    if os.path.exists(report_path):
      with open(report_path) as f:
        summary.update(summary_notes.from_report(json.load(f)))
    summary['report'] = os.path.join(blessing.uri, 'report.html')
  examples = outputs.get('FileBasedExampleGen', {}).get('examples')
  if examples:
    summary['input_skipped'] = {
        name: cp(examples.artifact, name) for name in (
            keys.CAPPED_LINES, keys.DROPPED_LONG_TOKENS,
            keys.FIRST_SKIPPING_FILE)}
  vocabulary = outputs.get('Vocabulary', {}).get(keys.VOCABULARY)
  if vocabulary:
    summary['empty_ids'] = json.loads(
        cp(vocabulary.artifact, keys.EMPTY_IDS) or '{}')
  if 'EmbeddingTrainer' in outputs:
    model = outputs['EmbeddingTrainer']['model'].artifact
    summary['model'] = model.uri
    meta_path = os.path.join(model.uri, 'metadata.json')
    if os.path.exists(meta_path):
      with open(meta_path) as f:
        summary['training'] = json.load(f)
  if 'EmbeddingPusher' in outputs:
    summary.update(push_outcome.read(outputs['EmbeddingPusher'],
                                     p['push_root']))
  return summary


def format_summary(summary: Dict[str, Any]) -> str:
  lines = summary_notes.warnings(summary)
  lines.append(summary_notes.verdict(summary))
  lines += push_outcome.lines(summary)
  metrics = summary.get('metrics') or {}
  for role in ('candidate', 'baseline', 'popularity', 'untrained'):
    shown = {k: v for k, v in (metrics.get(role) or {}).items()
             if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if shown:
      lines.append(f'{role} metrics: ' + ', '.join(
          f'{k}={v:.4g}' for k, v in sorted(shown.items())))
  training = summary.get('training') or {}
  if training:
    lines.append(
        f'training: {training.get("steps")} steps, '
        f'{training.get("examples_seen")} examples, final loss '
        f'{summary_notes.final_loss(summary)}, '
        f'device {training.get("device")}, '
        f'spans {training.get("spans")}')
    if training.get('resumed_from'):
      lines.append(f'resumed: from step {training.get("resumed_from_step")} '
                   f'of interrupted {training["resumed_from"]}')
    lines.append(summary_notes.start(summary))
    scaling = corpus_scaling.summary_line(
        training.get(corpus_scaling.METADATA_KEY))
    if scaling:
      lines.append(scaling)
  if summary.get('cached'):
    lines.append(f'cached (inputs unchanged): {", ".join(summary["cached"])}')
  t = summary.get('timing')
  if t:
    total = t.get('total_seconds', t['wall_seconds'])
    outside = total - t['component_seconds']
    lines.append(f'time: {total:.1f}s end to end, '
                 f'{t["component_seconds"]:.1f}s in components, '
                 f'{outside:.1f}s outside them (start-up, imports, '
                 'orchestration)')
  for k in ('model', 'report'):
    if summary.get(k):
      lines.append(f'{k}: {summary[k]}')
  run_id = summary.get('run_id')
  lines.append(f'metadata: {summary["paths"]["metadata"]}' +
               (f' (run {run_id})' if run_id else ''))
  return '\n'.join(lines)
