"""The Kubeflow compilation: a KFP v2 YAML that the kfp SDK loads, names the
image, runs only the trainer on a TPU and always reads the latest span."""

import os
import subprocess
import sys

import kfp.components
import pytest
import yaml
from google.protobuf import json_format

from pipelines import pipeline as pipeline_lib
from pipelines.kubeflow import compile as kubeflow_compile
from pipelines.kubeflow import parameters as kubeflow_parameters
from pipelines.kubeflow import resources as kubeflow_resources
from pipelines.kubeflow import spec_edits
from tests.support import paths
from tests.support.compiled_package import IMAGE
from tests.support.compiled_package import ROOTS
from tests.support.compiled_package import executor as _executor
from tests.support.compiled_package import load as _load
from tests.support.compiled_package import param as _param
from tests.support.compiled_package import resources as _resources

REPO = paths.REPO


@pytest.fixture(scope='module')
def tpu_yaml(tmp_path_factory):
  path = str(tmp_path_factory.mktemp('tpu') / 'pipeline.yaml')
  compiled = kubeflow_compile.compile_pipeline(
      path, image=IMAGE,
      tpu=kubeflow_compile.TpuRequest.parse('tpu-v5-lite-podslice', '2x4'),
      config=pipeline_lib.PipelineConfig().replace(train_steps=1234), **ROOTS)
  return compiled, _load(path)


@pytest.fixture(scope='module')
def cpu_yaml(tmp_path_factory):
  path = str(tmp_path_factory.mktemp('cpu') / 'pipeline.yaml')
  compiled = kubeflow_compile.compile_pipeline(
      path, image=IMAGE, pipeline_name='embeddings-cpu', **ROOTS)
  return compiled, _load(path)


def test_kfp_sdk_loads_the_package_with_its_platform_spec(tpu_yaml):
  compiled, _ = tpu_yaml
  component = kfp.components.load_component_from_file(compiled.path)
  assert component.name == pipeline_lib.PIPELINE_NAME
  assert set(component.pipeline_spec.root.dag.tasks) == set(compiled.tasks)
  selectors = json_format.MessageToDict(component.platform_spec)[
      'platforms']['kubernetes']['deploymentSpec']['executors']
  assert list(selectors) == ['EmbeddingTrainer_executor']


def test_every_task_runs_the_image(tpu_yaml):
  _, (spec, _) = tpu_yaml
  executors = spec['deploymentSpec']['executors']
  assert len(executors) == 6
  assert {e['container']['image'] for e in executors.values()} == {IMAGE}


def test_only_the_trainer_requests_a_tpu(tpu_yaml):
  compiled, (spec, platform) = tpu_yaml
  assert compiled.trainer_task == 'EmbeddingTrainer'
  with_accelerator = {
      label for label, e in spec['deploymentSpec']['executors'].items()
      if e['container'].get('resources', {}).get('accelerator')}
  trainer_label, trainer = _executor(spec, 'EmbeddingTrainer')
  assert with_accelerator == {trainer_label}
  assert trainer['container']['resources']['accelerator'] == {
      'type': 'google.com/tpu', 'count': '8'}  # 2x4 chips
  assert trainer['container']['env'] == [{'name': 'TPU_NAME',
                                          'value': 'local'}]
  k8s = platform['platforms']['kubernetes']['deploymentSpec']['executors']
  assert k8s == {trainer_label: {
      'nodeSelector': {'labels': {
          'cloud.google.com/gke-tpu-accelerator': 'tpu-v5-lite-podslice',
          'cloud.google.com/gke-tpu-topology': '2x4'}},
      'tolerations': [{'effect': 'NoSchedule', 'key': 'google.com/tpu',
                       'operator': 'Exists'}]}}
  assert _param(spec, 'EmbeddingTrainer', 'tpu') == 'auto'
  assert _param(spec, 'EmbeddingTrainer', 'train_steps') == 1234


def test_without_a_tpu_everything_runs_on_cpu(cpu_yaml):
  compiled, docs = cpu_yaml
  assert len(docs) == 1  # no Kubernetes platform section
  spec = docs[0]
  for label, e in spec['deploymentSpec']['executors'].items():
    assert 'accelerator' not in e['container']['resources']
    assert 'env' not in e['container'] or label == _executor(
        spec, 'EmbeddingExporter')[0]
  assert _param(spec, 'EmbeddingTrainer', 'tpu') == ''
  assert compiled.tpu is None
  assert spec['pipelineInfo']['name'] == compiled.pipeline_name == (
      'embeddings-cpu')


@pytest.mark.parametrize('fixture', ['tpu_yaml', 'cpu_yaml'])
def test_the_exporter_gives_freed_table_memory_back(fixture, request):
  """Its load checks load the exports after it released the table: with
  TensorFlow's pooling allocator its pod would hold two copies."""
  _, (spec, *_) = request.getfixturevalue(fixture)
  _, exporter = _executor(spec, 'EmbeddingExporter')
  assert {'name': 'TF_ONEDNN_USE_SYSTEM_ALLOCATOR', 'value': 'true'} in (
      exporter['container']['env'])


def test_example_gen_resolves_the_latest_span_in_its_container(cpu_yaml):
  _, (spec, *_) = cpu_yaml
  _, example_gen = _executor(spec, 'FileBasedExampleGen')
  container = example_gen['container']
  assert 'lifecycle' not in container  # open-source KFP would skip it
  assert container['command'] == list(spec_edits.EXAMPLE_GEN_COMMAND)
  assert container['args'][:2] == [
      '--executor_class_path',
      'components.corpus_example_gen.executor.Executor']
  tasks = spec['root']['dag']['tasks']
  # Never cached, so a scheduled run sees a new span; the rest are cached.
  assert not tasks['FileBasedExampleGen']['cachingOptions'].get('enableCache')
  assert all(t['cachingOptions']['enableCache']
             for name, t in tasks.items() if name != 'FileBasedExampleGen')
  assert _param(spec, 'FileBasedExampleGen', 'input_base') == ROOTS[
      'data_root']
  assert '{SPAN}' in _param(spec, 'FileBasedExampleGen', 'input_config')


def test_roots_and_components_importable_from_the_image(cpu_yaml):
  _, (spec, *_) = cpu_yaml
  assert spec['defaultPipelineRoot'] == ROOTS['pipeline_root']
  assert _param(spec, 'CheckpointValidator', 'push_root') == ROOTS['push_root']
  assert _param(spec, 'EmbeddingPusher', 'push_root') == ROOTS['push_root']
  assert set(spec['root']['dag']['tasks']) == {
      'FileBasedExampleGen', 'Vocabulary', 'EmbeddingTrainer',
      'CheckpointValidator', 'EmbeddingExporter', 'EmbeddingPusher'}
  for e in spec['deploymentSpec']['executors'].values():
    assert set(e) == {'container'}  # no importer / resolver executors
    args = e['container']['args']
    executor = args[args.index('--executor_class_path') + 1]
    assert executor.startswith('components.') and '__main__' not in executor
  # Custom artifact types are imported by their schema title in the pod.
  vocabulary = spec['components']['Vocabulary']['outputDefinitions'][
      'artifacts']['vocabulary']['artifactType']['instanceSchema']
  assert yaml.safe_load(vocabulary)['title'] == 'components.Vocabulary'


@pytest.mark.slow
def test_dockerfile_ships_every_module_the_package_runs(cpu_yaml):
  """Each task's module is under a folder the image copies onto PYTHONPATH."""
  with open(os.path.join(REPO, 'kubeflow', 'Dockerfile')) as f:
    lines = [l.split() for l in f if l.strip() and not l.startswith('#')]
  assert lines[0][:2] == ['FROM', 'python:3.10-slim-bookworm']
  copied = {l[1].strip('/') for l in lines if l[0] == 'COPY'}
  assert 'requirements.txt' in copied
  workdir = [l[1] for l in lines if l[0] == 'WORKDIR'][-1]
  assert ['ENV', f'PYTHONPATH={workdir}'] in lines
  _, (spec, *_) = cpu_yaml
  modules = set()
  for e in spec['deploymentSpec']['executors'].values():
    args, command = e['container']['args'], e['container']['command']
    modules.add(args[args.index('--executor_class_path') + 1])
    modules.add(command[command.index('-m') + 1])
  for module in modules:
    top = module.split('.')[0]
    assert top == 'tfx' or top in copied, module
    if top != 'tfx':
      path = os.path.join(REPO, *module.split('.')[:2])
      assert os.path.isdir(path) or os.path.isfile(path + '.py'), module
  # ...and every package of this repository those modules import.
  code = ('import importlib, sys\n'
          f'for m in {sorted(modules)!r}:\n'
          '  importlib.import_module(m.rsplit(".", 1)[0] if m.endswith('
          '"Executor") else m)\n'
          'print(" ".join(sorted({n.split(".")[0] for n in sys.modules})))')
  done = subprocess.run([sys.executable, '-c', code], cwd=REPO,
                        capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-2000:]
  ours = {top for top in done.stdout.split() if os.path.isfile(
      os.path.join(REPO, top, '__init__.py'))}
  assert ours and ours <= copied, ours - copied
  with open(os.path.join(REPO, 'kubeflow', 'Dockerfile.dockerignore')) as f:
    allowed = {l.strip()[1:].strip('/') for l in f if l.startswith('!')}
  assert ours <= allowed, ours - allowed


def _dockerfile_stages():
  """[(stage name, [instruction words])] of kubeflow/Dockerfile, lines
  continued with a backslash joined."""
  with open(os.path.join(REPO, 'kubeflow', 'Dockerfile')) as f:
    text = f.read().replace('\\\n', ' ')
  stages = []
  for line in text.splitlines():
    words = line.split()
    if not words or words[0].startswith('#'):
      continue
    if words[0] == 'FROM':
      stages.append((words[3] if len(words) > 3 else '', []))
    stages[-1][1].append(words)
  return stages


def test_the_image_carries_the_cpu_ops_built_in_a_stage_with_a_compiler():
  """The trainer in the image loads the skip-gram CPU ops without a
  compiler: a stage with g++ builds them from the kernels folder into a
  cache, the last stage copies that cache where its ENV points the
  library, and checks that they load."""
  stages = _dockerfile_stages()
  names = [name for name, _ in stages]
  *_, (_, last) = stages
  copied = [w for w in last if w[0] == 'COPY' and w[1].startswith('--from=')]
  assert len(copied) == 1, copied
  builder = dict(stages)[copied[0][1][len('--from='):]]
  assert copied[0][1][len('--from='):] in names[:-1]
  assert any('g++' in w for w in builder if w[0] == 'RUN')
  assert not any('g++' in w for w in last if w[0] == 'RUN')
  kernels = [w for w in builder if w[:2] == ['COPY', 'tpu_embeddings/kernels/']]
  assert len(kernels) == 1, builder
  built = [w for w in builder if w[0] == 'RUN' and
           f'{kernels[0][2].rstrip("/")}/library.py' in w]
  assert len(built) == 1, builder
  cache = [w.split('=', 1)[1] for w in built[0]
           if w.startswith('TPU_EMBEDDINGS_KERNEL_CACHE=')]
  assert [c.rstrip('/') for c in cache] == [copied[0][2].rstrip('/')], built
  env = [w[1].split('=', 1)[1] for w in last if w[0] == 'ENV'
         and w[1].startswith('TPU_EMBEDDINGS_KERNEL_CACHE=')]
  assert [e.rstrip('/') for e in env] == [copied[0][3].rstrip('/')], env
  package = next(i for i, w in enumerate(last)
                 if w[:2] == ['COPY', 'tpu_embeddings/'])
  assert ['RUN', 'python', '-m', 'tpu_embeddings.kernels.library'] in last[
      package:]


@pytest.mark.parametrize('fixture', ['tpu_yaml', 'cpu_yaml'])
def test_every_task_requests_the_cpu_and_memory_it_is_limited_to(
    fixture, request):
  compiled, (spec, *_) = request.getfixturevalue(fixture)
  found = _resources(spec)
  assert sorted(found) == sorted(kubeflow_resources.TASKS)
  for task, r in found.items():
    assert r['cpuRequest'] == r['cpuLimit'] > 0, task
    assert r['memoryRequest'] == r['memoryLimit'] >= 1, task
    assert (r['cpuLimit'], r['memoryLimit']) == (
        compiled.resources[task].cpu, compiled.resources[task].memory_gb)
  # The TPU trainer's host holds checkpoints it saves: more than the pusher.
  assert found['EmbeddingTrainer']['memoryLimit'] > found[
      'EmbeddingPusher']['memoryLimit']


def test_roots_and_configs_are_run_time_parameters(cpu_yaml):
  compiled, (spec, *_) = cpu_yaml
  declared = spec['root']['inputDefinitions']['parameters']
  assert sorted(declared) == sorted(kubeflow_parameters.PARAMETERS)
  for name, p in declared.items():
    assert p['parameterType'] == 'STRING' and p['isOptional'], name
    assert p['defaultValue'] == compiled.parameters[name]
  tasks = spec['root']['dag']['tasks']

  def wired(task, key):
    return tasks[task]['inputs']['parameters'][key]['componentInputParameter']

  assert wired('FileBasedExampleGen', 'input_base') == 'data_root'
  assert declared['data_root']['defaultValue'] == ROOTS['data_root']
  for task in ('EmbeddingTrainer', 'CheckpointValidator', 'EmbeddingPusher'):
    assert wired(task, 'push_root') == 'push_root'
  assert declared['push_root']['defaultValue'] == ROOTS['push_root']
  for name, (task, config_class) in (
      kubeflow_parameters.CONFIG_PARAMETERS.items()):
    assert wired(task, 'config') == name
    # The default is the complete config the component checks.
    config_class.from_json(declared[name]['defaultValue'])
  # The SDK that submits the package sees the same inputs.
  component = kfp.components.load_component_from_file(compiled.path)
  assert sorted(component.component_spec.inputs) == sorted(declared)
