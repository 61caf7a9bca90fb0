"""Compile the pipeline for Kubeflow Pipelines (KFP v2 YAML) with TFX's
KubeflowV2DagRunner.

    compile_pipeline('kubeflow/pipeline.yaml', image='gcr.io/p/tpu-emb:1',
                     pipeline_root='gs://bucket/tfx',
                     data_root='gs://bucket/corpus',
                     push_root='gs://bucket/embeddings',
                     tpu=TpuRequest.parse('tpu-v5-lite-podslice', '2x2'))

What the YAML holds, beyond TFX's own compilation:
  * Only the trainer requests a TPU: its container asks for `google.com/tpu`
    chips (KFP turns `accelerator.type` into the resource limit), and the
    Kubernetes platform section pins it to the GKE TPU node pool with the
    `cloud.google.com/gke-tpu-accelerator` / `-topology` node selectors and
    tolerates the pool's taint. Its `tpu` parameter is "auto" and
    TPU_NAME=local tells it the chips are on its own VM. Every other task
    runs on CPU nodes.
  * The ExampleGen task resolves the latest span inside its own container
    (open-source KFP does not run TFX's pre-cache-check driver hook) and is
    never cached, so every run, and every run of a schedule, trains on the
    newest span under the data root.
  * Every task requests the CPU and memory it is limited to, sized from the
    config (pipelines/kubeflow/resources.py).
  * The data root, the push root and each component's config are run-time
    parameters defaulting to the compiled values
    (pipelines/kubeflow/parameters.py), so a run or a schedule can set them;
    a config carries only the settings its model uses (a module model's
    has no `window`, `negatives`, ...: pipelines/model_settings.py).
  * `defaultPipelineRoot` is the pipeline root, since a YAML package carries
    no runtimeConfig.
  * A TPU slice that spans more than one host is refused (tpu_hosts.py).
  * No credential: a Beam argument, a custom_config key or a root that
    looks like one is refused (pipelines/kubeflow/credentials.py).
No Resolver node is compiled (open-source KFP refuses them): the validator's
baseline is the version under the push root.
"""

import contextlib
import dataclasses
import os
import sys
import tempfile
from typing import Any, Dict, List, Optional

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from tensorflow import errors as tf_errors
from tfx import v1 as tfx
from tfx.dsl.components.base import executor_spec
from tfx.orchestration import data_types
from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner

from components import keys
from pipelines import model_settings
from pipelines import pipeline as pipeline_lib
from pipelines import whole_file
from pipelines.kubeflow import credentials
from pipelines.kubeflow import parameters as kubeflow_parameters
from pipelines.kubeflow import resources as kubeflow_resources
from pipelines.kubeflow import spec_edits
from pipelines.kubeflow import tpu_hosts
from pipelines.kubeflow.flags import TPU_RESOURCE
from pipelines.kubeflow.flags import TpuRequest
from pipelines.kubeflow.flags import check_image
from pipelines.kubeflow.flags import check_output
from pipelines.kubeflow.flags import check_uri
from tpu_embeddings.core import settings

TRAINER_TPU_PARAMETER = 'auto'

_ResourceSpec = (
    pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec
    .ResourceSpec)


@dataclasses.dataclass
class CompiledPipeline:
  """Where the YAML went and what it asks of the cluster."""
  path: str
  pipeline_name: str
  image: str
  tasks: List[str]
  trainer_task: str
  tpu: Optional[TpuRequest]
  resources: Dict[str, kubeflow_resources.TaskResources]
  parameters: Dict[str, str]  # name -> compiled default


def _find_trainer(components):
  from components.trainer.component import EmbeddingTrainer
  found = [c for c in components if isinstance(c, EmbeddingTrainer)]
  if len(found) != 1:
    raise RuntimeError(f'expected one EmbeddingTrainer in the pipeline, '
                       f'found {len(found)}')
  return found[0]


def _check_nodes(components):
  """No Resolver nodes; every executor importable from the image."""
  for node in components:
    if isinstance(node, tfx.dsl.Resolver):
      raise RuntimeError(
          f'node {node.id} is a Resolver; open-source Kubeflow Pipelines '
          'cannot run it: read the baseline from the push root instead')
    spec = getattr(node, 'executor_spec', None)
    cls = getattr(spec, 'executor_class', None)
    if isinstance(spec, executor_spec.ExecutorClassSpec) and (
        cls.__module__ == '__main__'):
      raise RuntimeError(
          f'{node.id}: executor {cls.__name__} is defined in __main__; move '
          'it to a module under components/ so the image can import it')


def _runtime_parameters(components, data_root: str, push_root: str,
                        module_file: str) -> Dict[str, str]:
  """Data root, push root and each config become STRING RuntimeParameters
  defaulting to the compiled values (kubeflow_parameters), each config
  without the settings the model of `module_file` does not use; name ->
  default."""
  defaults = {}

  def parameter(name: str, default: str):
    defaults[name] = default
    return data_types.RuntimeParameter(name=name, ptype=str, default=default)

  data = parameter(kubeflow_parameters.DATA_ROOT, data_root)
  push = parameter(kubeflow_parameters.PUSH_ROOT, push_root)
  by_id = {c.id: c for c in components}
  by_id[kubeflow_resources.EXAMPLE_GEN].exec_properties['input_base'] = data
  for c in components:
    if c.exec_properties.get(keys.PUSH_ROOT):
      c.exec_properties[keys.PUSH_ROOT] = push
  unused = model_settings.unused_settings(model_settings.load(module_file))
  for name, (task, _) in kubeflow_parameters.CONFIG_PARAMETERS.items():
    props = by_id[task].exec_properties
    props[settings.CONFIG_KEY] = parameter(
        name, kubeflow_parameters.compiled_config(
            name, props[settings.CONFIG_KEY], unused))
  return defaults


def build_pipeline(pipeline_root: str, data_root: str, push_root: str,
                   config: pipeline_lib.PipelineConfig,
                   tpu: Optional[TpuRequest],
                   task_resources: Dict[str, kubeflow_resources.TaskResources],
                   beam_pipeline_args: Optional[List[str]] = None,
                   pipeline_name: str = pipeline_lib.PIPELINE_NAME,
                   module_file: str = ''):
  """(pipeline, trainer, parameter defaults) as Kubeflow runs it: roots and
  configs as run-time parameters, each task's CPU and memory set, the trainer
  on TPU or CPU; a module file packaged as a wheel under the pipeline root,
  as TFX packages its Trainer's."""
  config = config.replace(
      **{'trainer.tpu': TRAINER_TPU_PARAMETER if tpu else ''})
  pipeline = pipeline_lib.create_pipeline(
      pipeline_root=pipeline_root, data_root=data_root,
      push_root=push_root, config=config,
      pipeline_name=pipeline_name, beam_pipeline_args=beam_pipeline_args,
      enable_cache=True, module_file=module_file)
  _check_nodes(pipeline.components)
  trainer = _find_trainer(pipeline.components)
  ids = sorted(c.id for c in pipeline.components)
  if ids != sorted(kubeflow_resources.TASKS):
    raise RuntimeError(f'pipeline tasks {ids} are not the ones sized in '
                       'pipelines/kubeflow/resources.py')
  defaults = _runtime_parameters(pipeline.components, data_root, push_root,
                                 module_file)
  for c in pipeline.components:
    sized = task_resources[c.id]
    resource_spec = _ResourceSpec(
        cpu_request=sized.cpu, cpu_limit=sized.cpu,
        memory_request=sized.memory_gb, memory_limit=sized.memory_gb)
    if tpu and c is trainer:
      resource_spec.accelerator.CopyFrom(_ResourceSpec.AcceleratorConfig(
          type=TPU_RESOURCE, count=tpu.count))
    c.with_platform_config(resource_spec)
  return pipeline, trainer, defaults


def _header(spec: Dict[str, Any], image: str, tpu: Optional[TpuRequest],
            trainer_task: str,
            task_resources: Dict[str, kubeflow_resources.TaskResources]) -> str:
  where = (f'{trainer_task} on {tpu.count} {TPU_RESOURCE} chip(s), '
           f'{tpu.accelerator} {tpu.topology}; other tasks on CPU'
           if tpu else 'every task on CPU')
  sized = ', '.join(f'{task} {r}' for task, r in task_resources.items())
  return ('# PIPELINE DEFINITION (KFP v2 YAML; compiled from TFX by '
          '`python -m pipelines compile`)\n'
          f'# Name: {spec["pipelineInfo"]["name"]}\n'
          f'# Image: {image}\n'
          f'# Pipeline root: {spec.get("defaultPipelineRoot", "")}\n'
          f'# Devices: {where}\n'
          f'# Requests = limits: {sized}\n'
          '# Run-time parameters: '
          f'{", ".join(kubeflow_parameters.PARAMETERS)}\n')


@contextlib.contextmanager
def _output_to(log: str):
  """This process's and its subprocesses' stdout and stderr go to `log`."""
  sys.stdout.flush()
  sys.stderr.flush()
  saved = [os.dup(1), os.dup(2)]
  with open(log, 'ab') as f:
    try:
      os.dup2(f.fileno(), 1)
      os.dup2(f.fileno(), 2)
      yield
    finally:
      os.dup2(saved[0], 1)
      os.dup2(saved[1], 2)
      for fd in saved:
        os.close(fd)


def _pipeline_spec(pipeline, image: str, pipeline_name: str,
                   pipeline_root: str, module_file: str) -> Dict[str, Any]:
  """TFX's KFP v2 pipeline spec of `pipeline`, as a dict. A module file is
  first built into a wheel under the pipeline root (setuptools' output kept
  in a log, named if the build fails)."""
  runner = kubeflow_v2_dag_runner.KubeflowV2DagRunner(
      config=kubeflow_v2_dag_runner.KubeflowV2DagRunnerConfig(
          default_image=image, display_name=pipeline_name,
          use_pipeline_spec_2_1=True))
  if not module_file:
    return runner.run(pipeline, write_out=False)['pipelineSpec']
  fd, log = tempfile.mkstemp(prefix='tpu-embeddings-wheel-', suffix='.log')
  os.close(fd)
  try:
    with _output_to(log):
      spec = runner.run(pipeline, write_out=False)['pipelineSpec']
  except (OSError, tf_errors.OpError) as e:
    os.remove(log)
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    raise ValueError(
        f'--pipeline-root {pipeline_root}: cannot write the module file\'s '
        f'wheel under it ({first[:200]}); compile where the pipeline root '
        'is writable') from e
  except RuntimeError as e:
    raise ValueError(f'--module-file {module_file}: its wheel did not build '
                     f'({e}); the build\'s output is in {log}') from e
  os.remove(log)
  return spec


def compile_pipeline(output: str,
                     image: str,
                     pipeline_root: str,
                     data_root: str,
                     push_root: str,
                     config: Optional[pipeline_lib.PipelineConfig] = None,
                     tpu: Optional[TpuRequest] = None,
                     beam_pipeline_args: Optional[List[str]] = None,
                     pipeline_name: str = pipeline_lib.PIPELINE_NAME,
                     task_resources: Optional[Dict[
                         str, kubeflow_resources.TaskResources]] = None,
                     module_file: str = '') -> CompiledPipeline:
  """Writes the KFP v2 YAML package to `output` (complete or not at all).

  `task_resources` default to `kubeflow_resources.estimate(config, tpu)`.
  """
  tpu_hosts.check_single_host(tpu)
  check_output(output)
  image = check_image(image)
  pipeline_root = check_uri('--pipeline-root', pipeline_root)
  data_root = check_uri('--data-root', data_root)
  push_root = check_uri('--push-root', push_root)
  config = config or pipeline_lib.PipelineConfig()
  credentials.check_compiled(beam_pipeline_args, config)
  task_resources = task_resources or kubeflow_resources.estimate(
      config, tpu is not None)
  pipeline, trainer, defaults = build_pipeline(
      pipeline_root, data_root, push_root, config, tpu, task_resources,
      beam_pipeline_args, pipeline_name, module_file)

  spec = _pipeline_spec(pipeline, image, pipeline_name, pipeline_root,
                        module_file)
  spec['defaultPipelineRoot'] = pipeline_root
  spec_edits.resolve_span_in_container(spec)
  spec_edits.post_process(spec, pipeline.components, defaults)
  platform = spec_edits.platform_spec(spec, trainer.id, tpu)

  # What kfp.Client will parse; fail here rather than at submit time.
  json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
  json_format.ParseDict(platform, pipeline_spec_pb2.PlatformSpec())

  docs = [spec] + ([platform] if platform else [])
  text = _header(spec, image, tpu, trainer.id, task_resources) + (
      yaml.safe_dump_all(docs, sort_keys=True, default_flow_style=False))
  whole_file.write(output, text)
  return CompiledPipeline(
      path=output, pipeline_name=spec['pipelineInfo']['name'], image=image,
      tasks=sorted(spec['root']['dag']['tasks']), trainer_task=trainer.id,
      tpu=tpu, resources=task_resources, parameters=defaults)
