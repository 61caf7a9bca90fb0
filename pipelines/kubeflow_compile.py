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
  * `defaultPipelineRoot` is the pipeline root, since a YAML package carries
    no runtimeConfig.
No Resolver node is compiled (open-source KFP refuses them): the validator's
baseline is the version under the push root.
"""

import dataclasses
import os
import re
import tempfile
from typing import Any, Dict, List, Optional

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from tfx import v1 as tfx
from tfx.dsl.components.base import executor_spec
from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner
import yaml

from pipelines import pipeline as pipeline_lib

TPU_RESOURCE = 'google.com/tpu'
GKE_TPU_ACCELERATOR_LABEL = 'cloud.google.com/gke-tpu-accelerator'
GKE_TPU_TOPOLOGY_LABEL = 'cloud.google.com/gke-tpu-topology'
# The container entrypoint of the ExampleGen task (pipelines/
# kubeflow_example_gen.py): span resolution, then TFX's executor entrypoint.
EXAMPLE_GEN_COMMAND = ('python', '-m', 'pipelines.kubeflow_example_gen')
TRAINER_TPU_PARAMETER = 'auto'
TRAINER_TPU_ENV = {'TPU_NAME': 'local'}

_ResourceSpec = (
    pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec
    .ResourceSpec)


@dataclasses.dataclass(frozen=True)
class TpuRequest:
  """A GKE TPU slice for the trainer's pod.

  accelerator: GKE accelerator label, e.g. tpu-v5-lite-podslice, tpu-v4-podslice.
  topology: chip topology of the slice, e.g. 2x2 or 2x2x1.
  count: `google.com/tpu` chips requested (default: chips in the topology).
  """
  accelerator: str
  topology: str
  count: int

  @classmethod
  def parse(cls, accelerator: Optional[str], topology: Optional[str],
            count: Optional[int] = None) -> Optional['TpuRequest']:
    """None when no TPU is asked for; a one-line error for bad flags."""
    if not accelerator and not topology and count is None:
      return None
    if not accelerator:
      raise ValueError('--tpu-topology/--tpu-count need --tpu-accelerator, '
                       'e.g. --tpu-accelerator tpu-v5-lite-podslice')
    if not re.fullmatch(r'tpu-[a-z0-9][a-z0-9-]*', accelerator):
      raise ValueError(
          f'--tpu-accelerator {accelerator!r}: expected a GKE TPU accelerator '
          'label such as tpu-v5-lite-podslice or tpu-v4-podslice')
    if not topology:
      raise ValueError(f'--tpu-accelerator {accelerator} needs --tpu-topology '
                       '(GKE schedules TPU pods by both labels), e.g. 2x2')
    if not re.fullmatch(r'[1-9]\d*(x[1-9]\d*){1,2}', topology):
      raise ValueError(f'--tpu-topology {topology!r}: expected chips per '
                       'dimension such as 2x2 or 2x2x1')
    chips = 1
    for d in topology.split('x'):
      chips *= int(d)
    if count is None:
      count = chips
    if count < 1:
      raise ValueError(f'--tpu-count must be >= 1, got {count}')
    if count > chips:
      raise ValueError(f'--tpu-count {count} exceeds the {chips} chips of '
                       f'topology {topology}')
    return cls(accelerator, topology, count)


@dataclasses.dataclass
class CompiledPipeline:
  """Where the YAML went and what it asks of the cluster."""
  path: str
  pipeline_name: str
  image: str
  tasks: List[str]
  trainer_task: str
  tpu: Optional[TpuRequest]


def _check_uri(flag: str, value: str) -> str:
  if not value or value != value.strip() or any(c.isspace() for c in value):
    raise ValueError(f'{flag} {value!r}: give a URI without spaces, e.g. '
                     'gs://bucket/path')
  return value.rstrip('/') if len(value) > 1 else value


def _check_image(image: str) -> str:
  if not image or not re.fullmatch(r'[A-Za-z0-9][^\s]*', image):
    raise ValueError(f'--image {image!r}: give the component image, e.g. '
                     'us-docker.pkg.dev/PROJECT/REPO/tpu-embeddings:TAG '
                     '(built from kubeflow/Dockerfile)')
  return image


def _find_trainer(components):
  from components.trainer.component import EmbeddingTrainer  # pylint: disable=g-import-not-at-top
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


def build_pipeline(pipeline_root: str, data_root: str, push_root: str,
                   config: pipeline_lib.PipelineConfig,
                   tpu: Optional[TpuRequest],
                   beam_pipeline_args: Optional[List[str]] = None,
                   pipeline_name: str = pipeline_lib.PIPELINE_NAME):
  """The TFX pipeline as Kubeflow runs it: trainer on TPU or CPU."""
  config = config.replace(
      **{'trainer.tpu': TRAINER_TPU_PARAMETER if tpu else ''})
  pipeline = pipeline_lib.create_pipeline(
      pipeline_root=pipeline_root, data_root=data_root,
      push_root=push_root, config=config,
      pipeline_name=pipeline_name, beam_pipeline_args=beam_pipeline_args,
      enable_cache=True)
  _check_nodes(pipeline.components)
  trainer = _find_trainer(pipeline.components)
  if tpu:
    trainer.with_platform_config(_ResourceSpec(
        accelerator=_ResourceSpec.AcceleratorConfig(
            type=TPU_RESOURCE, count=tpu.count)))
  return pipeline, trainer


def _executor_label(spec: Dict[str, Any], task: str) -> str:
  component = spec['root']['dag']['tasks'][task]['componentRef']['name']
  return spec['components'][component]['executorLabel']


def _resolve_span_in_container(spec: Dict[str, Any]) -> List[str]:
  """ExampleGen: run the span driver in the task's own container, no cache.

  TFX compiles FileBasedExampleGen with a `lifecycle.preCacheCheck` driver
  that only Vertex AI Pipelines runs; without it the executor would read the
  literal `{SPAN}` pattern. The task's command becomes
  pipelines.kubeflow_example_gen, which runs that driver and then TFX's
  executor entrypoint with the same arguments.
  """
  tasks = []
  for name in spec['root']['dag']['tasks']:
    label = _executor_label(spec, name)
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


def _platform_spec(spec: Dict[str, Any], trainer_task: str,
                   tpu: Optional[TpuRequest]) -> Dict[str, Any]:
  if not tpu:
    return {}
  label = _executor_label(spec, trainer_task)
  container = spec['deploymentSpec']['executors'][label]['container']
  container['env'] = [{'name': k, 'value': v}
                      for k, v in sorted(TRAINER_TPU_ENV.items())]
  return {'platforms': {'kubernetes': {'deploymentSpec': {'executors': {
      label: {
          'nodeSelector': {'labels': {
              GKE_TPU_ACCELERATOR_LABEL: tpu.accelerator,
              GKE_TPU_TOPOLOGY_LABEL: tpu.topology,
          }},
          'tolerations': [{'key': TPU_RESOURCE, 'operator': 'Exists',
                           'effect': 'NoSchedule'}],
      }}}}}}


def _header(spec: Dict[str, Any], image: str,
            tpu: Optional[TpuRequest], trainer_task: str) -> str:
  where = (f'{trainer_task} on {tpu.count} {TPU_RESOURCE} chip(s), '
           f'{tpu.accelerator} {tpu.topology}; other tasks on CPU'
           if tpu else 'every task on CPU')
  return ('# PIPELINE DEFINITION (KFP v2 YAML; compiled from TFX by '
          '`python -m pipelines compile`)\n'
          f'# Name: {spec["pipelineInfo"]["name"]}\n'
          f'# Image: {image}\n'
          f'# Pipeline root: {spec.get("defaultPipelineRoot", "")}\n'
          f'# Devices: {where}\n')


def compile_pipeline(output: str,
                     image: str,
                     pipeline_root: str,
                     data_root: str,
                     push_root: str,
                     config: Optional[pipeline_lib.PipelineConfig] = None,
                     tpu: Optional[TpuRequest] = None,
                     beam_pipeline_args: Optional[List[str]] = None,
                     pipeline_name: str = pipeline_lib.PIPELINE_NAME
                    ) -> CompiledPipeline:
  """Writes the KFP v2 YAML package to `output` (complete or not at all)."""
  if not output.endswith(('.yaml', '.yml')):
    raise ValueError(f'--output {output}: kfp.Client takes a .yaml package; '
                     'name the file *.yaml')
  image = _check_image(image)
  pipeline_root = _check_uri('--pipeline-root', pipeline_root)
  data_root = _check_uri('--data-root', data_root)
  push_root = _check_uri('--push-root', push_root)
  out_dir = os.path.dirname(os.path.abspath(output))
  if not os.path.isdir(out_dir):
    raise FileNotFoundError(f'--output {output}: directory {out_dir} does not '
                            'exist')
  config = config or pipeline_lib.PipelineConfig()
  pipeline, trainer = build_pipeline(pipeline_root, data_root, push_root,
                                     config, tpu, beam_pipeline_args,
                                     pipeline_name)

  runner = kubeflow_v2_dag_runner.KubeflowV2DagRunner(
      config=kubeflow_v2_dag_runner.KubeflowV2DagRunnerConfig(
          default_image=image, display_name=pipeline_name,
          use_pipeline_spec_2_1=True))
  job = runner.run(pipeline, write_out=False)
  spec = job['pipelineSpec']
  spec['defaultPipelineRoot'] = pipeline_root
  _resolve_span_in_container(spec)
  platform = _platform_spec(spec, trainer.id, tpu)

  # What kfp.Client will parse; fail here rather than at submit time.
  json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
  json_format.ParseDict(platform, pipeline_spec_pb2.PlatformSpec())

  docs = [spec] + ([platform] if platform else [])
  text = _header(spec, image, tpu, trainer.id) + yaml.safe_dump_all(
      docs, sort_keys=True, default_flow_style=False)
  fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(output) + '.',
                             dir=out_dir)
  try:
    with os.fdopen(fd, 'w') as f:
      f.write(text)
    os.replace(tmp, output)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise
  return CompiledPipeline(
      path=output, pipeline_name=spec['pipelineInfo']['name'], image=image,
      tasks=sorted(spec['root']['dag']['tasks']), trainer_task=trainer.id,
      tpu=tpu)
