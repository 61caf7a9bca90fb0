"""The Kubeflow compilation: a KFP v2 YAML that the kfp SDK loads, names the
image, runs only the trainer on a TPU and always reads the latest span."""

import json
import os

import kfp.components
import pytest
import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from pipelines import pipeline as pipeline_lib
from pipelines.cli import main as cli
from pipelines.kubeflow import compile as kubeflow_compile
from pipelines.kubeflow import parameters as kubeflow_parameters
from pipelines.kubeflow import resources as kubeflow_resources
from pipelines.kubeflow import spec_edits
from tests.support import paths

IMAGE = 'us-docker.pkg.dev/my-project/ml/tpu-embeddings:1.2.3'
ROOTS = dict(pipeline_root='gs://my-bucket/tfx',
             data_root='gs://my-bucket/corpus',
             push_root='gs://my-bucket/embeddings')
REPO = paths.REPO


def _load(path):
  """Both documents, checked against the KFP protos kfp.Client parses."""
  with open(path) as f:
    docs = list(yaml.safe_load_all(f))
  json_format.ParseDict(docs[0], pipeline_spec_pb2.PipelineSpec())
  if len(docs) > 1:
    json_format.ParseDict(docs[1], pipeline_spec_pb2.PlatformSpec())
  return docs


def _executor(spec, task):
  label = spec['components'][spec['root']['dag']['tasks'][task][
      'componentRef']['name']]['executorLabel']
  return label, spec['deploymentSpec']['executors'][label]


def _param(spec, task, name):
  """A task's parameter, or a setting of its JSON `config` parameter; a
  run-time parameter's compiled default."""
  params = spec['root']['dag']['tasks'][task]['inputs']['parameters']
  if name not in params:
    return json.loads(_param(spec, task, 'config'))[name]
  if 'componentInputParameter' in params[name]:
    return spec['root']['inputDefinitions']['parameters'][params[name][
        'componentInputParameter']]['defaultValue']
  return params[name]['runtimeValue']['constant']


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
  for e in spec['deploymentSpec']['executors'].values():
    assert 'accelerator' not in e['container']['resources']
    assert 'env' not in e['container']
  assert _param(spec, 'EmbeddingTrainer', 'tpu') == ''
  assert compiled.tpu is None
  assert spec['pipelineInfo']['name'] == compiled.pipeline_name == (
      'embeddings-cpu')


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


@pytest.mark.parametrize('flags, message', [
    (('tpu-v5-lite-podslice', None, None), 'needs --tpu-topology'),
    ((None, '2x2', None), 'need --tpu-accelerator'),
    (('nvidia-tesla-t4', '2x2', None), 'expected a GKE TPU accelerator'),
    (('tpu-v4-podslice', '2by2', None), 'expected chips per dimension'),
    (('tpu-v4-podslice', '2x2', 0), 'must be >= 1'),
    (('tpu-v4-podslice', '2x2', 8), 'exceeds the 4 chips'),
])
def test_bad_tpu_flags(flags, message):
  with pytest.raises(ValueError, match=message):
    kubeflow_compile.TpuRequest.parse(*flags)


def test_tpu_count_defaults_to_the_topology():
  assert kubeflow_compile.TpuRequest.parse('tpu-v4-podslice', '2x2x1').count == 4
  assert kubeflow_compile.TpuRequest.parse(None, None) is None


def test_bad_arguments_write_nothing(tmp_path):
  out = tmp_path / 'pipeline.yaml'
  for kwargs, message in [
      (dict(image='has space'), '--image'),
      (dict(image=IMAGE, pipeline_root=''), '--pipeline-root'),
      (dict(image=IMAGE, push_root='gs://b/with space'), '--push-root'),
  ]:
    args = dict(ROOTS, **kwargs)
    with pytest.raises(ValueError, match=message):
      kubeflow_compile.compile_pipeline(str(out), **args)
  with pytest.raises(ValueError, match=r'\.yaml'):
    kubeflow_compile.compile_pipeline(str(tmp_path / 'p.json'), image=IMAGE,
                                      **ROOTS)
  with pytest.raises(FileNotFoundError, match='does not exist'):
    kubeflow_compile.compile_pipeline(str(tmp_path / 'no' / 'p.yaml'),
                                      image=IMAGE, **ROOTS)
  assert os.listdir(tmp_path) == []


def test_compile_command(tmp_path, capsys):
  out = tmp_path / 'pipeline.yaml'
  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', 'gs://b/tfx/', '--tpu-accelerator',
                 'tpu-v5-lite-podslice', '--tpu-topology', '2x2',
                 '--set', 'train_steps=77'])
  assert rc == 0
  spec, _ = _load(str(out))
  assert _param(spec, 'EmbeddingTrainer', 'train_steps') == 77
  # Data and push roots default under the pipeline root.
  assert _param(spec, 'FileBasedExampleGen', 'input_base') == 'gs://b/tfx/data'
  assert _param(spec, 'EmbeddingPusher', 'push_root') == 'gs://b/tfx/pushed'
  printed = capsys.readouterr().out
  assert 'EmbeddingTrainer on 4 google.com/tpu chip(s)' in printed
  assert sorted(os.listdir(tmp_path)) == ['pipeline.yaml']  # no temp left

  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', 'gs://b/tfx', '--tpu-topology', '2x2'])
  err = capsys.readouterr().err.strip()
  assert rc == 2 and err.startswith('error: --tpu-topology')
  assert len(err.splitlines()) == 1


def test_committed_example_package():
  """kubeflow/pipeline.yaml: loadable, placeholder names, TPU on trainer."""
  path = os.path.join(REPO, 'kubeflow', 'pipeline.yaml')
  spec, platform = _load(path)
  images = {e['container']['image']
            for e in spec['deploymentSpec']['executors'].values()}
  assert len(images) == 1 and 'tpu-embeddings' in images.pop()
  trainer_label, trainer = _executor(spec, 'EmbeddingTrainer')
  assert trainer['container']['resources']['accelerator']['type'] == (
      'google.com/tpu')
  assert list(platform['platforms']['kubernetes']['deploymentSpec'][
      'executors']) == [trainer_label]
  for task, r in _resources(spec).items():
    assert r['cpuRequest'] == r['cpuLimit'] > 0, task
    assert r['memoryRequest'] == r['memoryLimit'] > 0, task
  assert sorted(spec['root']['inputDefinitions']['parameters']) == sorted(
      kubeflow_parameters.PARAMETERS)


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


def _resources(spec):
  return {task: _executor(spec, task)[1]['container']['resources']
          for task in spec['root']['dag']['tasks']}


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


def test_table_size_sizes_the_validator_and_exporter(tmp_path):
  path = str(tmp_path / 'big.yaml')
  big = pipeline_lib.PipelineConfig().replace(**{
      'vocabulary.max_tokens': 10_000_000, 'table.dim': 64})
  kubeflow_compile.compile_pipeline(path, image=IMAGE, config=big, **ROOTS)
  spec = _load(path)[0]
  found = _resources(spec)
  table_gb = 10_000_001 * 64 * 4 * 2 / 1e9  # adagrad: table + accumulator
  for task in ('CheckpointValidator', 'EmbeddingExporter', 'EmbeddingTrainer'):
    assert found[task]['memoryLimit'] > table_gb, task
  assert found['EmbeddingPusher']['memoryLimit'] < table_gb


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


def test_resource_flags_override_the_estimate(tmp_path, capsys):
  out = tmp_path / 'pipeline.yaml'
  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', 'gs://b/tfx', '--cpu',
                 'EmbeddingTrainer=16', '--memory', 'EmbeddingExporter=64Gi'])
  assert rc == 0
  found = _resources(_load(str(out))[0])
  assert found['EmbeddingTrainer']['cpuLimit'] == 16
  assert found['EmbeddingExporter']['memoryLimit'] == pytest.approx(68.719)
  assert 'EmbeddingExporter 4 CPU 68.719 GB' in capsys.readouterr().out
