"""The import-time stderr filter drops exactly XLA's factory lines."""

import os
import subprocess
import sys

import pytest

from pipelines.cli import stderr_filter
from tests.support import paths

FACTORY = (b'2026-01-01 00:00:00.000000: E external/local_xla/xla/stream_'
           b'executor/cuda/cuda_dnn.cc:9261] Unable to register cuDNN factory: '
           b'Attempting to register factory for plugin cuDNN when one has '
           b'already been registered\n')
REAL = b'2026-01-01 00:00:00.000000: E some/file.cc:1] a real error\n'


def test_drops_factory_lines_and_keeps_everything_else(capfd):
  with stderr_filter.dropping_lines():
    os.write(2, FACTORY)
    os.write(2, REAL)
    os.write(2, FACTORY.replace(b'cuDNN', b'cuBLAS'))
    os.write(2, b'last line without newline')
  assert capfd.readouterr().err == REAL.decode() + 'last line without newline'


def test_replays_what_came_before_an_exception(capfd):
  with pytest.raises(ImportError):
    with stderr_filter.dropping_lines():
      os.write(2, REAL)
      raise ImportError('broken')
  assert capfd.readouterr().err == REAL.decode()


@pytest.mark.slow
def test_import_tensorflow_is_quiet_once_installed():
  code = ('from pipelines.cli import stderr_filter\n'
          'stderr_filter.install()\n'
          'import tensorflow as tf\n'
          'assert tf.constant(1).numpy() == 1\n'
          'import sys; sys.stderr.write("still writable\\n")\n')
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONWARNINGS='ignore')
  done = subprocess.run([sys.executable, '-c', code], capture_output=True,
                        env=env, timeout=300,
                        cwd=paths.REPO)
  assert done.returncode == 0, done.stderr
  assert b'Unable to register' not in done.stderr
  assert done.stderr.strip().endswith(b'still writable')


def test_a_closed_stderr_is_left_alone():
  code = ('import os\n'
          'os.close(2)\n'
          'from pipelines.cli import stderr_filter\n'
          'with stderr_filter.dropping_lines():\n'
          '  print("ran")\n')
  done = subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, timeout=60,
                        cwd=paths.REPO)
  assert done.returncode == 0 and done.stdout == 'ran\n', done
