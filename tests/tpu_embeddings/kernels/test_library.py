"""Building, caching and falling back from the skip-gram CPU ops."""

import logging
import os
import shutil
import stat
import subprocess
import sys

import pytest

from tests.support import paths
from tpu_embeddings.kernels import library


@pytest.fixture
def cache(tmp_path, monkeypatch):
  monkeypatch.setenv(library.CACHE, str(tmp_path / 'cache'))
  monkeypatch.delenv(library.SWITCH, raising=False)
  library.status.cache_clear()
  yield tmp_path / 'cache'
  library.status.cache_clear()


def warned(caplog):
  return [r.getMessage() for r in caplog.records
          if r.levelno == logging.WARNING]


def broken_compiler(tmp_path):
  path = tmp_path / 'broken-c++'
  path.write_text('#!/bin/sh\necho "fatal error: no such header" >&2\n'
                  'exit 1\n')
  path.chmod(path.stat().st_mode | stat.S_IEXEC)
  return str(path)


def test_a_failed_build_is_reported_once_and_not_retried(
    cache, tmp_path, monkeypatch, caplog):
  monkeypatch.setenv('CXX', broken_compiler(tmp_path))
  with pytest.raises(library.BuildError, match='no such header'):
    library.build()
  failure = os.path.join(os.path.dirname(library.library_path()),
                         library.FAILURE_NAME)
  assert 'no such header' in open(failure, encoding='utf-8').read()
  assert library.load() is None
  assert len(warned(caplog)) == 1
  assert 'earlier build failed' in warned(caplog)[0]
  assert not os.path.exists(library.library_path())


def test_no_compiler_falls_back_with_one_line(cache, monkeypatch, caplog):
  monkeypatch.setenv('CXX', 'no-such-compiler')
  assert library.load() is None
  assert len(warned(caplog)) == 1
  assert 'no C++ compiler: install g++ or set CXX' in warned(caplog)[0]


def test_switched_off_loads_nothing(cache, monkeypatch):
  monkeypatch.setenv(library.SWITCH, 'off')
  monkeypatch.setenv('CXX', 'no-such-compiler')
  assert library.load() is None
  assert not os.path.exists(str(cache))


def test_the_key_names_tensorflow_and_changes_with_the_flags(monkeypatch):
  import tensorflow as tf
  key = library.build_key()
  assert key.startswith(f'tf{tf.version.VERSION}-')
  monkeypatch.setenv(library.EXTRA_FLAGS, '-march=native')
  assert library.build_key() != key


def test_the_build_command_says_in_one_line_why_it_cannot(
    cache, monkeypatch, capsys):
  monkeypatch.setenv('CXX', 'no-such-compiler')
  assert library.main() == 1
  err = capsys.readouterr().err
  assert err == ('skip-gram CPU ops: no C++ compiler: install g++ or set '
                 f'CXX (for {library.library_path()}); the CPU trainer '
                 "takes TensorFlow's slower ops\n"), err
  assert library.library_path().startswith(str(cache))


@pytest.mark.slow
def test_a_build_from_the_sources_alone_loads_without_a_compiler(
    cache, tmp_path):
  """What the component image does (kubeflow/Dockerfile): a stage with a
  compiler runs the build command from a copy of this folder alone; the
  package then finds that build in the cache, builds nothing again, and
  loads it in a process with no compiler."""
  sources = tmp_path / 'kernels'
  shutil.copytree(os.path.dirname(library.__file__), sources,
                  ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
  built = subprocess.run([sys.executable, str(sources / 'library.py')],
                         cwd=tmp_path, capture_output=True, text=True,
                         check=False)
  assert built.returncode == 0, built.stderr[-2000:]
  path = built.stdout.strip().splitlines()[-1]
  assert path == library.library_path() and os.path.exists(path)
  assert path.startswith(str(cache))
  mtime = os.stat(path).st_mtime_ns
  assert library.build() == path
  assert os.stat(path).st_mtime_ns == mtime
  # Loaded in a fresh process: a process holds one build of the ops, and
  # the other tests use the default cache's.
  check = ('from tpu_embeddings.kernels import library; '
           'ops = library.load(); '
           'print(ops is not None and '
           'all(hasattr(ops, n) for n in library.OP_NAMES))')
  out = subprocess.run([sys.executable, '-c', check], cwd=paths.REPO,
                       env=dict(os.environ, CXX='no-such-compiler'),
                       capture_output=True, text=True, check=True).stdout
  assert out.strip().splitlines()[-1] == 'True', out


X86_AVX = '''processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu vme de pse tsc msr sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma
'''
X86_NO_AVX = '''processor\t: 0
flags\t\t: fpu vme de pse tsc msr sse sse2 ssse3 sse4_1 sse4_2 avx512_fake
'''
ARM64 = '''processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
'''


@pytest.mark.parametrize('machine,cpuinfo,expected', [
    ('x86_64', X86_AVX, ['-mavx']),
    ('AMD64', X86_AVX, ['-mavx']),
    ('x86_64', X86_NO_AVX, []),
    ('x86_64', '', []),
    ('aarch64', ARM64, []),
    ('arm64', X86_AVX, []),
])
def test_avx_only_where_the_cpu_has_it(machine, cpuinfo, expected):
  assert library.cpu_flags(machine, cpuinfo) == expected


def test_an_arm64_build_has_no_x86_flag(monkeypatch, tmp_path):
  cpuinfo = tmp_path / 'cpuinfo'
  cpuinfo.write_text(ARM64)
  monkeypatch.setattr(library.platform, 'machine', lambda: 'aarch64')
  monkeypatch.setattr(library, 'CPUINFO', str(cpuinfo))
  arm = library.flags()
  assert '-mavx' not in arm and '-O3' in arm and '-fno-math-errno' in arm
  monkeypatch.setattr(library.platform, 'machine', lambda: 'x86_64')
  cpuinfo.write_text(X86_AVX)
  assert library.flags()[:5] == ['-shared', '-fPIC', '-O3', '-mavx',
                                 '-fno-math-errno']


def test_the_status_says_why_the_ops_are_not_loaded(cache, monkeypatch):
  monkeypatch.setenv(library.SWITCH, 'off')
  status = library.status()
  assert status.ops is None
  assert status.reason == f'switched off ({library.SWITCH}=off)'
