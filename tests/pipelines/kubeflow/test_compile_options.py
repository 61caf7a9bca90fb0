"""The Kubeflow compilation's options: TPU flags, bad arguments, the compile
command, resource sizing and overrides, and the committed example package."""

import os

import pytest

from pipelines import pipeline as pipeline_lib
from pipelines.cli import main as cli
from pipelines.kubeflow import compile as kubeflow_compile
from pipelines.kubeflow import parameters as kubeflow_parameters
from tests.support import paths
from tests.support.compiled_package import IMAGE
from tests.support.compiled_package import ROOTS
from tests.support.compiled_package import executor as _executor
from tests.support.compiled_package import load as _load
from tests.support.compiled_package import param as _param
from tests.support.compiled_package import resources as _resources

REPO = paths.REPO


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
  assert kubeflow_compile.TpuRequest.parse(
      'tpu-v4-podslice', '2x2x1').count == 4
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
  printed, warned = capsys.readouterr()
  assert 'EmbeddingTrainer on 4 google.com/tpu chip(s)' in printed
  assert warned == ''  # gs:// roots: no local-path warning
  assert sorted(os.listdir(tmp_path)) == ['pipeline.yaml']  # no temp left

  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', 'gs://b/tfx', '--tpu-topology', '2x2'])
  err = capsys.readouterr().err.strip()
  assert rc == 2 and err.startswith('error: --tpu-topology')
  assert len(err.splitlines()) == 1


def test_local_roots_compile_with_one_warning_each(tmp_path, capsys):
  """Pods cannot read this machine's disk: each local root is named on
  stderr; the package is still written."""
  out = tmp_path / 'pipeline.yaml'
  local = str(tmp_path / 'tfx')
  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', local, '--push-root', 's3://b/pushed'])
  warned = capsys.readouterr().err.splitlines()
  assert rc == 0 and out.exists()
  assert [line.split(' ', 3)[:3] for line in warned] == [
      ['warning:', '--pipeline-root', local],
      ['warning:', '--data-root', f'{local}/data']], warned
  assert all(line.endswith("is a local path: the pods cannot see this "
                           "machine's disk; give a root they can reach, "
                           "e.g. gs://bucket/path") for line in warned)


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


def test_committed_example_package_carries_todays_defaults(tmp_path):
  """The example's run parameters and resources are what compiling it today
  gives (kubeflow/README.md's flags): recompile it when a default changes."""
  committed = _load(os.path.join(REPO, 'kubeflow', 'pipeline.yaml'))[0]
  path = str(tmp_path / 'today.yaml')
  kubeflow_compile.compile_pipeline(
      path, image=committed['deploymentSpec']['executors'][
          'EmbeddingPusher_executor']['container']['image'],
      pipeline_root=committed['defaultPipelineRoot'],
      data_root='gs://YOUR_BUCKET/corpus',
      push_root='gs://YOUR_BUCKET/embeddings',
      tpu=kubeflow_compile.TpuRequest.parse('tpu-v5-lite-podslice', '2x2'))
  today = _load(path)[0]
  assert committed['root']['inputDefinitions'] == (
      today['root']['inputDefinitions'])
  assert _resources(committed) == _resources(today)


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
