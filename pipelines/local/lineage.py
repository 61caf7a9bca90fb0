"""Lineage of a pushed version from ML Metadata: version -> model -> examples
-> span.

A version in the push root whose push ML Metadata does not hold (the pusher
died after the rename, before its execution was published; or a `rollback`,
which runs outside the pipeline) is traced from its manifest instead: the
manifest, written before the rename, names the pipeline run that pushed it and
the trainer Model, whose producers are then walked as usual.
"""

from typing import Any, Dict, List, Optional

from ml_metadata.proto import metadata_store_pb2

from pipelines.local import home as home_lib
from pipelines.local import metadata_queries as mq
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.core import file_system
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout

PUSHER_NODE = 'EmbeddingPusher'


def _recorded(store) -> Dict[int, list]:
  """{version: its PushedModel artifacts} of the pushes MLMD recorded."""
  recorded: Dict[int, list] = {}
  for a in store.get_artifacts_by_type('PushedModel'):
    if mq.custom_property(a, 'pushed') == 1:
      recorded.setdefault(int(mq.custom_property(a, 'pushed_version')),
                          []).append(a)
  return recorded


def _on_disk(root: str) -> List[int]:
  if not file_system.isdir(root):
    return []
  return push_layout.list_versions(root, push_layout.SERVED)


def _pusher_execution(store, run_id: str):
  """The EmbeddingPusher execution of pipeline run `run_id`, or None."""
  if not run_id:
    return None
  run = store.get_context_by_type_and_name('pipeline_run', run_id)
  if run is None:
    return None
  for execution in store.get_executions_by_context(run.id):
    if mq._node_of(store, execution.id) == PUSHER_NODE:
      return execution
  return None


def _not_recorded_note(store, manifest: Dict[str, Any]) -> Dict[str, Any]:
  """Why MLMD has no record of a version on disk, from its manifest."""
  run_id = manifest.get('pipeline_run_id') or ''
  if 'rollback_of' in manifest:
    return {'pipeline_run_id': run_id, 'pusher_execution': None,
            'note': f'a rollback of version {manifest["rollback_of"]}; '
                    'rollbacks are not recorded in ML Metadata'}
  execution = _pusher_execution(store, run_id)
  if execution is None:
    return {'pipeline_run_id': run_id, 'pusher_execution': None,
            'note': f'pushed by pipeline run {run_id or "(unknown)"}, which '
                    'has no EmbeddingPusher execution in ML Metadata'}
  state = metadata_store_pb2.Execution.State.Name(execution.last_known_state)
  return {'pipeline_run_id': run_id,
          'pusher_execution': {'id': execution.id, 'state': state},
          'note': f'pushed by pipeline run {run_id} (EmbeddingPusher execution '
                  f'{execution.id}, state {state}), which stopped after '
                  'publishing it and before ML Metadata recorded the push'}


def _damage(root: str, version: int) -> List[str]:
  """What the load check finds wrong with a version still in the push root
  ([] when intact or gone)."""
  if version not in _numbered(root):
    return []
  return integrity.version_problems(root, version)


def _numbered(root: str) -> List[int]:
  if not file_system.isdir(root):
    return []
  return push_layout.numbered(root, push_layout.SERVED)


def _describe(store, artifact) -> Dict[str, Any]:
  d = {'type': mq.artifact_type(store, artifact), 'uri': artifact.uri,
       'id': artifact.id}
  for name in ('span', 'blessed', 'pushed_version', 'pushed_destination'):
    value = mq.custom_property(artifact, name)
    if value is not None:
      d[name] = value
  return d


def lineage(home: str, version: Optional[int] = None) -> Dict[str, Any]:
  """Walks producers upstream from the pushed artifacts of `version`.

  `version` defaults to the newest, recorded or in the push root. The store
  is only read, and refused when it belongs to another home.
  """
  store = mq.open_store(home, read_only=True)
  root = home_lib.push_root(home)
  recorded, on_disk = _recorded(store), _on_disk(root)
  versions = sorted(set(recorded) | set(on_disk))
  if not versions:
    raise ValueError('no pushed version is recorded in ML Metadata or found '
                     f'in the push root {root}')
  if version is None:
    version = versions[-1]
  if version in recorded:
    result = _walk(store, recorded[version])
    result.update(version=version, recorded=True,
                  pushed=[_describe(store, a) for a in recorded[version]],
                  damaged=_damage(root, version))
    return result
  if version not in on_disk:
    raise ValueError(
        f'pushed version {version} is neither recorded in ML Metadata nor '
        f'complete in the push root {root}; recorded versions: '
        f'{sorted(recorded)}, in the push root: {on_disk}')
  manifest = push_layout.read_manifest(root, push_layout.SERVED, version)
  source = home_paths.resolve(manifest.get('source_model') or '', root)
  models = [a for a in store.get_artifacts_by_uri(source) if a.uri]
  result = _walk(store, models)
  result.update(_not_recorded_note(store, manifest))
  result.update(
      version=version, recorded=False, damaged=_damage(root, version),
      model=[_describe(store, a) for a in models],
      pushed=[{'type': 'PushedModel (not recorded)',
               'uri': push_layout.version_dir(root, kind, version),
               'pushed_destination': push_layout.version_dir(root, kind,
                                                             version),
               'pushed_version': str(version)} for kind in push_layout.KINDS])
  if not result['spans']:
    result['spans'] = sorted(int(s) for s in manifest.get('spans', []))
  return result


def _walk(store, frontier: list) -> Dict[str, Any]:
  """Producers upstream of `frontier`: steps, spans, warm start."""
  steps: List[Dict[str, Any]] = []
  seen = set()
  frontier = list(frontier)
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
  return {'spans': sorted(spans), 'warm_start_uri': warm_start,
          'steps': steps}


def format_lineage(result: Dict[str, Any]) -> str:
  lines = [f'pushed version {result["version"]} <- trained on span(s) '
           f'{", ".join(map(str, result["spans"])) or "unknown"}']
  if not result.get('recorded', True):
    lines.append(f'  not recorded in ML Metadata: {result["note"]}')
  for problem in result.get('damaged') or []:
    lines.append(f'  DAMAGED in the push root: {problem}')
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
