"""The embedded default: LocalDagRunner + SQLite ML Metadata + Beam DirectRunner.

    <home>/metadata.sqlite   ML Metadata
    <home>/pipeline/         pipeline root (artifacts)
    <home>/pushed/           push root (serving/<v>/, hub/<v>/)
"""

import dataclasses
import json
import logging as py_logging
import os
import re
import sys
import time
from typing import Any, Dict, List, Optional, TextIO

from absl import logging
from tfx import v1 as tfx

from pipelines import metadata_queries
from pipelines import pipeline as pipeline_lib


def paths(home: str) -> Dict[str, str]:
  home = os.path.abspath(home)
  return {
      'home': home,
      'metadata': metadata_queries.metadata_path(home),
      'pipeline_root': os.path.join(home, 'pipeline'),
      'push_root': os.path.join(home, 'pushed'),
  }


class _ProgressHandler(py_logging.Handler):
  """Turns LocalDagRunner's log records into one line per component."""

  _RUNNING = re.compile(r'^Component (\S+) is running\.$')
  _FINISHED = re.compile(r'^Component (\S+) is finished\.$')
  _CACHED = re.compile(r'^A cached execution \d+ is used\.$')

  def __init__(self, out: TextIO):
    super().__init__(level=py_logging.INFO)
    self._out = out
    self._started: Dict[str, float] = {}
    self._current: Optional[str] = None
    self._cached = False
    self.timings: Dict[str, float] = {}

  def emit(self, record):
    try:
      message = record.getMessage()
    except Exception:  # pylint: disable=broad-except
      return
    if m := self._RUNNING.match(message):
      self._current, self._cached = m.group(1), False
      self._started[self._current] = time.monotonic()
      print(f'  {self._current:<22} running ...', file=self._out, flush=True)
    elif self._CACHED.match(message):
      self._cached = True
    elif m := self._FINISHED.match(message):
      node = m.group(1)
      took = time.monotonic() - self._started.get(node, time.monotonic())
      self.timings[node] = took
      note = 'cached' if self._cached and node == self._current else 'done'
      print(f'  {node:<22} {note} in {took:.1f}s', file=self._out, flush=True)


def run(data_root: str,
        home: str,
        config: Optional[pipeline_lib.PipelineConfig] = None,
        warm_start_uri: str = '',
        beam_pipeline_args: Optional[List[str]] = None,
        out: TextIO = sys.stdout,
        verbose: bool = False) -> Dict[str, Any]:
  """Runs the pipeline locally and returns the summary dict."""
  if not os.path.isdir(data_root):
    raise FileNotFoundError(f'data root {data_root} is not a directory; '
                            'create it with `python -m pipelines demo-data`')
  p = paths(home)
  os.makedirs(p['home'], exist_ok=True)
  config = config or pipeline_lib.PipelineConfig()
  related = os.path.join(data_root, 'related_pairs.tsv')
  if config.related_pairs_file is None and os.path.exists(related):
    config = dataclasses.replace(config, related_pairs_file=os.path.abspath(related))
  pipeline = pipeline_lib.create_pipeline(
      pipeline_root=p['pipeline_root'],
      data_root=os.path.abspath(data_root),
      push_root=p['push_root'],
      config=config,
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(
              p['metadata'])),
      beam_pipeline_args=beam_pipeline_args or [
          '--direct_running_mode=in_memory', '--direct_num_workers=1'],
      warm_start_uri=warm_start_uri)
  handler = _ProgressHandler(out)
  absl_logger = logging.get_absl_logger()
  old_level = absl_logger.level
  absl_logger.addHandler(handler)
  if not verbose:
    logging.set_verbosity(logging.INFO)
    logging.get_absl_handler().setLevel(py_logging.WARNING)
  start = time.monotonic()
  try:
    tfx.orchestration.LocalDagRunner().run(pipeline)
  finally:
    absl_logger.removeHandler(handler)
    absl_logger.setLevel(old_level)
  wall = time.monotonic() - start
  summary = summarize(p['home'], pipeline_lib.PIPELINE_NAME)
  summary['timing'] = {
      'wall_seconds': round(wall, 1),
      'component_seconds': round(sum(handler.timings.values()), 1),
      'per_component': {k: round(v, 1) for k, v in handler.timings.items()},
  }
  return summary


def summarize(home: str, pipeline_name: str) -> Dict[str, Any]:
  """Blessed or why not, pushed version, key metrics, paths: from MLMD."""
  store = metadata_queries.open_store(home)
  outputs = metadata_queries.latest_run_outputs(store, pipeline_name)
  p = paths(home)
  summary: Dict[str, Any] = {'paths': p}
  cp = metadata_queries.custom_property
  if 'CheckpointValidator' in outputs:
    blessing = outputs['CheckpointValidator']['blessing'].artifact
    summary['blessed'] = bool(cp(blessing, 'blessed'))
    report_path = os.path.join(blessing.uri, 'report.json')
    if os.path.exists(report_path):
      with open(report_path) as f:
        report = json.load(f)
      summary['metrics'] = report.get('metrics', {})
      summary['failed_gates'] = [
          g for g in report.get('gates', []) if not g.get('passed', True)]
    summary['report'] = os.path.join(blessing.uri, 'report.html')
  if 'EmbeddingTrainer' in outputs:
    model = outputs['EmbeddingTrainer']['model'].artifact
    summary['model'] = model.uri
    meta_path = os.path.join(model.uri, 'metadata.json')
    if os.path.exists(meta_path):
      with open(meta_path) as f:
        summary['training'] = json.load(f)
  if 'EmbeddingPusher' in outputs:
    pushed = outputs['EmbeddingPusher']
    first = next(iter(pushed.values())).artifact
    summary['pushed'] = bool(cp(first, 'pushed'))
    summary['pushed_version'] = cp(first, 'pushed_version')
    summary['pushed_destinations'] = {
        k: cp(o.artifact, 'pushed_destination') for k, o in pushed.items()}
  return summary


def format_summary(summary: Dict[str, Any]) -> str:
  lines = []
  blessed = summary.get('blessed')
  if blessed is None:
    lines.append('validation: not run')
  elif blessed:
    lines.append('validation: BLESSED')
  else:
    reasons = '; '.join(
        f'{g.get("name")}: {g.get("reason", "failed")}'
        for g in summary.get('failed_gates', [])) or 'see report'
    lines.append(f'validation: NOT BLESSED ({reasons})')
  if summary.get('pushed'):
    lines.append(f'pushed: version {summary.get("pushed_version")}')
    for k, v in sorted(summary.get('pushed_destinations', {}).items()):
      lines.append(f'  {k}: {v}')
  else:
    lines.append('pushed: nothing (model not blessed)')
  metrics = summary.get('metrics') or {}
  shown = {k: v for k, v in metrics.items() if isinstance(v, (int, float))}
  if shown:
    lines.append('metrics: ' + ', '.join(
        f'{k}={v:.4g}' for k, v in sorted(shown.items())))
  training = summary.get('training') or {}
  if training:
    lines.append(
        f'training: {training.get("steps")} steps, '
        f'{training.get("examples_seen")} examples, final loss '
        f'{training.get("final_loss")}, device {training.get("device")}, '
        f'spans {training.get("spans")}')
  t = summary.get('timing')
  if t:
    outside = t['wall_seconds'] - t['component_seconds']
    lines.append(f'time: {t["wall_seconds"]:.1f}s wall, '
                 f'{t["component_seconds"]:.1f}s in components, '
                 f'{outside:.1f}s outside')
  for k in ('model', 'report'):
    if summary.get(k):
      lines.append(f'{k}: {summary[k]}')
  lines.append(f'metadata: {summary["paths"]["metadata"]}')
  return '\n'.join(lines)
