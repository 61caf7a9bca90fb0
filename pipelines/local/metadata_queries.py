"""Reading ML Metadata: a run's outputs and a pushed version's lineage."""

import dataclasses
import os
from typing import Dict, List, Optional

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from pipelines.local import home as home_lib
from pipelines.local import store_guard

OUTPUT_EVENTS = (metadata_store_pb2.Event.OUTPUT,
                 metadata_store_pb2.Event.DECLARED_OUTPUT)
INPUT_EVENTS = (metadata_store_pb2.Event.INPUT,
                metadata_store_pb2.Event.DECLARED_INPUT)
# The context type TFX gives each run of a synchronous pipeline.
PIPELINE_RUN_CONTEXT = 'pipeline_run'


def open_store(home: str,
               read_only: bool = False) -> metadata_store.MetadataStore:
  """The home's existing store; one line naming the file if it is damaged.
  `read_only`: refused when it belongs to another home
  (store_guard.check_owner), and opened so that nothing is written."""
  path = home_lib.metadata_path(home)
  if not os.path.exists(path) or read_only and not store_guard.check_owner(
      home):
    raise FileNotFoundError(f'no ML Metadata at {path}: run the pipeline with '
                            f'--home {home} first')
  return store_guard.open_store(home, read_only=read_only)


@dataclasses.dataclass
class Output:
  node: str
  key: str
  artifact: metadata_store_pb2.Artifact
  execution: metadata_store_pb2.Execution

  @property
  def cached(self) -> bool:
    return (self.execution.last_known_state ==
            metadata_store_pb2.Execution.CACHED)


def _node_of(store, execution_id: int) -> str:
  for ctx in store.get_contexts_by_execution(execution_id):
    if store.get_context_types_by_id([ctx.type_id])[0].name == 'node':
      return ctx.name.split('.', 1)[-1]
  return '?'


def _event_key(event) -> str:
  return event.path.steps[0].key if event.path.steps else ''


def latest_run_outputs(store,
                       pipeline_name: str) -> Dict[str, Dict[str, Output]]:
  """`{node id: {output key: Output}}` of the newest run of the pipeline."""
  runs = [c for c in store.get_contexts_by_type(PIPELINE_RUN_CONTEXT)
          if _run_of_pipeline(store, c, pipeline_name)]
  if not runs:
    return {}
  run = max(runs, key=lambda c: c.create_time_since_epoch)
  return run_outputs(store, run.id)


def pipeline_run_outputs(store, run_id: str) -> Dict[str, Dict[str, Output]]:
  """`{node id: {output key: Output}}` of the run with id `run_id`."""
  run = store.get_context_by_type_and_name(PIPELINE_RUN_CONTEXT, run_id)
  if run is None:
    raise ValueError(f'ML Metadata has no pipeline run {run_id!r}')
  return run_outputs(store, run.id)


def _run_of_pipeline(store, run_context, pipeline_name) -> bool:
  for parent in store.get_parent_contexts_by_context(run_context.id):
    if parent.name == pipeline_name:
      return True
  executions = store.get_executions_by_context(run_context.id)
  if not executions:
    return False
  return any(c.name == pipeline_name for c in store.get_contexts_by_execution(
      executions[0].id))


def run_outputs(store, run_context_id: int) -> Dict[str, Dict[str, Output]]:
  result: Dict[str, Dict[str, Output]] = {}
  executions = store.get_executions_by_context(run_context_id)
  for execution in executions:
    node = _node_of(store, execution.id)
    events = [e for e in store.get_events_by_execution_ids([execution.id])
              if e.type in OUTPUT_EVENTS]
    artifacts = {a.id: a for a in store.get_artifacts_by_id(
        [e.artifact_id for e in events])}
    for e in events:
      result.setdefault(node, {})[_event_key(e)] = Output(
          node, _event_key(e), artifacts[e.artifact_id], execution)
  return result


def producer(store, artifact_id: int):
  """(execution, node id) that produced an artifact, or (None, None)."""
  for e in store.get_events_by_artifact_ids([artifact_id]):
    if e.type in OUTPUT_EVENTS:
      execution = store.get_executions_by_id([e.execution_id])[0]
      return execution, _node_of(store, execution.id)
  return None, None


def inputs_of(store, execution_id: int) -> List[metadata_store_pb2.Artifact]:
  events = [e for e in store.get_events_by_execution_ids([execution_id])
            if e.type in INPUT_EVENTS]
  return store.get_artifacts_by_id([e.artifact_id for e in events])


def artifact_type(store, artifact) -> str:
  return store.get_artifact_types_by_id([artifact.type_id])[0].name


def custom_property(artifact, name: str) -> Optional[object]:
  """A custom property, or a property of the type (e.g. Examples' `span`)."""
  if name in artifact.custom_properties:
    value = artifact.custom_properties[name]
  elif name in artifact.properties:
    value = artifact.properties[name]
  else:
    return None
  which = value.WhichOneof('value')
  return getattr(value, which) if which else None


def mark_interrupted(store, model_uri: str, resumed_by: str) -> Optional[int]:
  """Marks the execution that was training `model_uri` as interrupted.

  A killed trainer's execution stays RUNNING and never records its output;
  TFX's local runner names the output `<root>/<node>/model/<execution id>`.
  When that execution is a trainer of the same pipeline root and still
  RUNNING it becomes CANCELED with custom properties `interrupted`=1 and
  `resumed_by` (the Model that continued it). Returns its id, or None.
  """
  try:
    execution_id = int(os.path.basename(model_uri.rstrip('/')))
  except ValueError:
    return None
  found = store.get_executions_by_id([execution_id])
  if not found or _node_of(store, execution_id) != 'EmbeddingTrainer':
    return None
  execution = found[0]
  root = custom_property(execution, 'resume_root') or ''
  node_dir = os.path.dirname(os.path.dirname(model_uri.rstrip('/')))
  if (execution.last_known_state != metadata_store_pb2.Execution.RUNNING or
      os.path.dirname(root.rstrip('/')) != node_dir):
    return None
  execution.last_known_state = metadata_store_pb2.Execution.CANCELED
  execution.custom_properties['interrupted'].int_value = 1
  execution.custom_properties['resumed_by'].string_value = resumed_by
  store.put_executions([execution])
  return execution_id
