"""Lineage of a pushed version from ML Metadata: version -> model -> examples -> span."""

from typing import Any, Dict, List, Optional

from components import model_layout
from pipelines import metadata_queries as mq


def _pushed_artifacts(store, version: Optional[int]):
  pushed = [a for a in store.get_artifacts_by_type('PushedModel')
            if mq.custom_property(a, 'pushed') == 1]
  if not pushed:
    raise ValueError('no pushed version is recorded in ML Metadata')
  versions = sorted({int(mq.custom_property(a, 'pushed_version'))
                     for a in pushed})
  if version is None:
    version = versions[-1]
  chosen = [a for a in pushed
            if int(mq.custom_property(a, 'pushed_version')) == version]
  if not chosen:
    raise ValueError(f'pushed version {version} is not recorded in ML Metadata;'
                     f' recorded versions: {versions}')
  return version, chosen


def _describe(store, artifact) -> Dict[str, Any]:
  d = {'type': mq.artifact_type(store, artifact), 'uri': artifact.uri,
       'id': artifact.id}
  for name in ('span', 'blessed', 'pushed_version', 'pushed_destination'):
    value = mq.custom_property(artifact, name)
    if value is not None:
      d[name] = value
  return d


def lineage(home: str, version: Optional[int] = None) -> Dict[str, Any]:
  """Walks producers upstream from the pushed artifacts of `version`."""
  store = mq.open_store(home)
  version, pushed = _pushed_artifacts(store, version)
  steps: List[Dict[str, Any]] = []
  seen = set()
  frontier = list(pushed)
  spans = set()
  warm_start = ''
  while frontier:
    artifact = frontier.pop(0)
    execution, node = mq.producer(store, artifact.id)
    if execution is None or execution.id in seen:
      continue
    seen.add(execution.id)
    inputs = mq.inputs_of(store, execution.id)
    step = {'node': node, 'execution': execution.id,
            'outputs': [_describe(store, artifact)],
            'inputs': [_describe(store, a) for a in inputs]}
    if node == 'EmbeddingTrainer':
      # What the trainer actually started from (an explicit warm_start_uri or
      # the pushed model it found at run time), as it recorded it.
      metadata = model_layout.read_metadata(artifact.uri) or {}
      warm_start = (metadata.get('warm_start') or {}).get('base_model', '')
      step['warm_start_uri'] = warm_start
    for a in inputs:
      span = mq.custom_property(a, 'span')
      if span is not None and mq.artifact_type(store, a) == 'Examples':
        spans.add(int(span))
    steps.append(step)
    frontier.extend(inputs)
  return {'version': version,
          'pushed': [_describe(store, a) for a in pushed],
          'spans': sorted(spans),
          'warm_start_uri': warm_start,
          'steps': steps}


def format_lineage(result: Dict[str, Any]) -> str:
  lines = [f'pushed version {result["version"]} <- trained on span(s) '
           f'{", ".join(map(str, result["spans"])) or "unknown"}']
  for p in result['pushed']:
    lines.append(f'  {p.get("pushed_destination", p["uri"])}')
  for step in result['steps']:
    lines.append(f'{step["node"]} (execution {step["execution"]})')
    for a in step['inputs']:
      extra = ''.join(f' {k}={a[k]}' for k in ('span', 'blessed') if k in a)
      lines.append(f'  <- {a["type"]}{extra}: {a["uri"]}')
    if step.get('warm_start_uri'):
      lines.append(f'  <- warm start: {step["warm_start_uri"]}')
  return '\n'.join(lines)
