"""Edits of TFX's compiled KFP v2 spec that open-source Kubeflow needs.

TFX 1.15's Kubeflow V2 compiler leaves out every task's resources for a
FileBasedExampleGen, the run-time parameters' defaults, and a span driver
that open-source KFP runs; these functions add them to the spec's dict.
"""

from typing import Any, Dict, List, Optional

from google.protobuf import json_format

from pipelines.kubeflow import container as container_entry
from pipelines.kubeflow import resources
from pipelines.kubeflow.flags import TpuRequest
from tpu_embeddings.core import tf_allocator

# The container entrypoint of the ExampleGen task (pipelines/kubeflow/
# example_gen.py): span resolution, then TFX's executor entrypoint.
EXAMPLE_GEN_COMMAND = ('python', '-m', 'pipelines.kubeflow.example_gen')
# TFX's V2 executor entrypoint, which every other task's command runs.
TFX_COMMAND = ('python', '-m',
               'tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor')
# The trainer's TPU is on its own VM.
TRAINER_TPU_ENV = {'TPU_NAME': 'local'}
# The exporter releases its table before its load checks load the exports:
# TensorFlow must give the memory back (tpu_embeddings/core/tf_allocator.py).
TASK_ENV = {resources.EXPORTER: tf_allocator.environ({})}


def executor_label(spec: Dict[str, Any], task: str) -> str:
  component = spec['root']['dag']['tasks'][task]['componentRef']['name']
  return spec['components'][component]['executorLabel']


def resolve_span_in_container(spec: Dict[str, Any]) -> List[str]:
  """ExampleGen: run the span driver in the task's own container, no cache.

  TFX compiles FileBasedExampleGen with a `lifecycle.preCacheCheck` driver
  that only Vertex AI Pipelines runs; without it the executor would read the
  literal `{SPAN}` pattern. The task's command becomes
  pipelines.kubeflow.example_gen, which runs that driver and then TFX's
  executor entrypoint with the same arguments.
  """
  tasks = []
  for name in spec['root']['dag']['tasks']:
    label = executor_label(spec, name)
    container = spec['deploymentSpec']['executors'][label].get('container', {})
    if 'lifecycle' not in container:
      continue
    del container['lifecycle']
    container['command'] = list(EXAMPLE_GEN_COMMAND)
    spec['root']['dag']['tasks'][name]['cachingOptions'] = {}
    tasks.append(name)
  if not tasks:
    raise RuntimeError('the compiled pipeline has no ExampleGen task with a '
                       'span driver; is the corpus ExampleGen still a '
                       'FileBasedExampleGen?')
  return tasks


def stop_cleanly(spec: Dict[str, Any]) -> List[str]:
  """Tasks run TFX's executor entrypoint through container.py, so that
  SIGTERM (a pod deleted or preempted) stops them cleanly, in one line."""
  labels = []
  for label, executor in spec['deploymentSpec']['executors'].items():
    container = executor.get('container', {})
    if tuple(container.get('command', ())) == TFX_COMMAND:
      container['command'] = list(container_entry.COMMAND)
      labels.append(label)
  return labels


def post_process(spec: Dict[str, Any], components,
                  defaults: Dict[str, str]):
  """What TFX 1.15's Kubeflow V2 compiler leaves out.

  Every task's `resources` (it drops the platform config of a
  FileBasedExampleGen) and TASK_ENV, the run-time parameters' defaults and
  optionality (it declares only their types), and a clean stop on SIGTERM
  (`stop_cleanly`).
  """
  stop_cleanly(spec)
  for c in components:
    container = spec['deploymentSpec']['executors'][executor_label(
        spec, c.id)]['container']
    container.setdefault('resources', {}).update(json_format.MessageToDict(
        c.platform_config))
    if c.id in TASK_ENV:
      container.setdefault('env', []).extend(
          {'name': k, 'value': v} for k, v in sorted(TASK_ENV[c.id].items()))
  declared = spec['root']['inputDefinitions']['parameters']
  if sorted(declared) != sorted(defaults):
    raise RuntimeError(f'compiled parameters {sorted(declared)} are not '
                       f'{sorted(defaults)}')
  for name, default in defaults.items():
    declared[name].update(defaultValue=default, isOptional=True)


def platform_spec(spec: Dict[str, Any], trainer_task: str,
                   tpu: Optional[TpuRequest]) -> Dict[str, Any]:
  if not tpu:
    return {}
  label = executor_label(spec, trainer_task)
  container = spec['deploymentSpec']['executors'][label]['container']
  container['env'] = [{'name': k, 'value': v}
                      for k, v in sorted(TRAINER_TPU_ENV.items())]
  return {'platforms': {'kubernetes': {'deploymentSpec': {'executors': {
      label: tpu.kubernetes_executor()}}}}}
