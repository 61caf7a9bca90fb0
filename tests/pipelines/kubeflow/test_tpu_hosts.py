"""Multi-host TPU slices are refused in one line naming --tpu-topology;
single-host slices keep compiling."""

import os
import subprocess
import sys

import pytest

from pipelines.kubeflow import compile as kubeflow_compile
from pipelines.kubeflow import tpu_hosts
from pipelines.kubeflow.flags import TpuRequest
from tests.support import paths
from tests.support.compiled_package import IMAGE
from tests.support.compiled_package import ROOTS


@pytest.mark.parametrize('accelerator,topology', [
    ('tpu-v5-lite-podslice', '1x1'), ('tpu-v5-lite-podslice', '2x2'),
    ('tpu-v5-lite-podslice', '2x4'), ('tpu-v4-podslice', '2x2x1'),
    ('tpu-v5p-slice', '2x2x1'), ('tpu-v6e-slice', '2x4'),
])
def test_single_host_slices_are_accepted(accelerator, topology):
  assert tpu_hosts.check_single_host(
      TpuRequest.parse(accelerator, topology)) == 1


@pytest.mark.parametrize('accelerator,topology,hosts', [
    ('tpu-v5-lite-podslice', '4x4', 4),   # v5e-16: 4 hosts of 4 chips
    ('tpu-v5-lite-podslice', '4x8', 8),
    ('tpu-v4-podslice', '2x2x4', 4),      # v4-32: 16 chips, 4 per host
    ('tpu-v4-podslice', '2x2x2', 2),
    ('tpu-v6e-slice', '4x4', 4),
])
def test_multi_host_slices_are_refused_naming_the_hosts(accelerator, topology,
                                                        hosts):
  with pytest.raises(ValueError) as refused:
    tpu_hosts.check_single_host(TpuRequest.parse(accelerator, topology))
  line = str(refused.value)
  assert line.startswith(f'--tpu-topology {topology}: ')
  assert f'spans {hosts} hosts' in line and 'single-host' in line
  assert '\n' not in line


def test_an_unknown_generation_names_the_known_ones():
  with pytest.raises(ValueError, match='--tpu-accelerator tpu-v9-slice: '
                     'unknown TPU generation.*tpu-v4-podslice'):
    tpu_hosts.check_single_host(TpuRequest.parse('tpu-v9-slice', '2x2'))
  assert tpu_hosts.check_single_host(None) is None


def test_compile_pipeline_refuses_a_multi_host_slice_writing_nothing(
    tmp_path):
  with pytest.raises(ValueError, match='spans 4 hosts'):
    kubeflow_compile.compile_pipeline(
        str(tmp_path / 'p.yaml'), image=IMAGE,
        tpu=TpuRequest.parse('tpu-v5-lite-podslice', '4x4'), **ROOTS)
  assert os.listdir(tmp_path) == []


def test_the_compile_command_refuses_it_in_one_line(tmp_path):
  out = str(tmp_path / 'p.yaml')
  done = subprocess.run(
      [sys.executable, '-m', 'pipelines', 'compile', '--output', out,
       '--image', IMAGE, '--pipeline-root', 'gs://b/tfx',
       '--tpu-accelerator', 'tpu-v5-lite-podslice', '--tpu-topology', '4x4'],
      cwd=paths.REPO, capture_output=True, text=True, timeout=120)
  assert done.returncode == 2
  errors = [line for line in done.stderr.splitlines()
            if line.startswith('error: ')]
  assert errors == [
      'error: --tpu-topology 4x4: a v5e slice of 16 chips spans 4 hosts; '
      'only single-host slices are supported (at most 8 v5e chips, e.g. '
      '2x4): the trainer feeds the TPU from one pod'], done.stderr
  assert os.listdir(tmp_path) == []
