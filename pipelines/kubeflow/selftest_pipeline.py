"""`compile --selftest`: a one-task pipeline that runs the self-test where
the trainer would run, so a cluster's TPU node pool is checked before a
day of training is spent on it.

    compile_selftest('kubeflow/selftest.yaml', image, 'gs://b/tfx',
                     tpu=TpuRequest.parse('tpu-v5-lite-podslice', '2x4'),
                     resources=TaskResources(8, 32.0),
                     settings=['trainer.batch_size=1024'])

The task runs `python -m pipelines selftest --tpu auto` in the pipeline's
image, on the trainer's node pool (the same accelerator request, node
selectors, toleration and TPU_NAME=local as the trainer's task), never
cached. A module file is carried in the task's environment and written into
the container before the self-test reads it (the image holds no examples/).
The task fails, and the run with it, when the trainers differ; its log holds
the table.
"""

import os
import tempfile
from typing import List, Optional

import yaml
from google.protobuf import json_format
from kfp import compiler
from kfp import dsl
from kfp.pipeline_spec import pipeline_spec_pb2

from pipelines import whole_file
from pipelines.kubeflow import spec_edits
from pipelines.kubeflow import tpu_hosts
from pipelines.kubeflow.flags import TPU_RESOURCE
from pipelines.kubeflow.flags import TpuRequest
from pipelines.kubeflow.resources import TaskResources

PIPELINE_NAME = 'tpu-embeddings-selftest'
TASK = 'selftest'
# Where the task writes a module file it was given, and the variable that
# carries its source.
MODULE_ENV = 'TPU_EMBEDDINGS_SELFTEST_MODULE'
MODULE_PATH = '/tmp/selftest_module.py'
_WITH_MODULE = (f'printf "%s" "${MODULE_ENV}" > {MODULE_PATH} && exec python '
                f'-m pipelines selftest --module-file {MODULE_PATH} "$@"')


def command(module_file: str) -> List[str]:
  if module_file:
    return ['sh', '-c', _WITH_MODULE, TASK]
  return ['python', '-m', 'pipelines', 'selftest']


def arguments(steps: int, settings: List[str]) -> List[str]:
  """The self-test's arguments: a TPU from the environment (TPU_NAME=local
  on the TPU node pool), `steps`, each `--set` setting."""
  found = ['--tpu', 'auto', '--steps', str(steps)]
  for item in settings:
    found += ['--set', item]
  return found


def _skeleton(image: str, args: List[str], name: str, module_file: str):
  """The KFP pipeline of one container task."""
  @dsl.container_component
  def selftest():
    return dsl.ContainerSpec(image=image, command=command(module_file),
                             args=args)

  @dsl.pipeline(name=name)
  def pipeline():
    selftest().set_caching_options(False)

  return pipeline


def _spec(pipeline) -> dict:
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, 'spec.yaml')
    compiler.Compiler().compile(pipeline, path)
    with open(path) as f:
      return yaml.safe_load(f)


def _source(module_file: str) -> str:
  if not module_file:
    return ''
  try:
    with open(module_file, encoding='utf-8') as f:
      return f.read()
  except (OSError, UnicodeDecodeError) as e:
    raise ValueError(f'--module-file {module_file}: cannot be read '
                     f'({type(e).__name__}: {e})') from e


def compile_selftest(output: str, image: str, pipeline_root: str,
                     tpu: Optional[TpuRequest], resources: TaskResources,
                     steps: int, settings: List[str], module_file: str = '',
                     pipeline_name: str = PIPELINE_NAME) -> str:
  """Writes the one-task package to `output` (complete or not at all)."""
  tpu_hosts.check_single_host(tpu)
  source = _source(module_file)
  spec = _spec(_skeleton(image, arguments(steps, settings), pipeline_name,
                         module_file))
  spec['defaultPipelineRoot'] = pipeline_root
  platform = spec_edits.platform_spec(spec, TASK, tpu)
  container = spec['deploymentSpec']['executors'][spec_edits.executor_label(
      spec, TASK)]['container']
  container['resources'] = resources.to_spec()
  if tpu:
    container['resources']['accelerator'] = {'type': TPU_RESOURCE,
                                             'count': str(tpu.count)}
  if source:
    container.setdefault('env', []).append({'name': MODULE_ENV,
                                            'value': source})
  json_format.ParseDict(spec, pipeline_spec_pb2.PipelineSpec())
  json_format.ParseDict(platform, pipeline_spec_pb2.PlatformSpec())
  where = (f'{tpu.count} {TPU_RESOURCE} chip(s), {tpu.accelerator} '
           f'{tpu.topology}' if tpu else 'CPU')
  text = (f'# SELF-TEST PIPELINE (KFP v2 YAML; `python -m pipelines compile '
          f'--selftest`)\n# Image: {image}\n# Device: {where}; {resources}\n'
          + yaml.safe_dump_all([spec] + ([platform] if platform else []),
                               sort_keys=True, default_flow_style=False))
  whole_file.write(output, text)
  return output
