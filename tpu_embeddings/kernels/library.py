"""The skip-gram CPU ops: C++ sources in this package, compiled once.

`load()` returns the op library (`tf.load_op_library`), compiling the sources
on first use into a cache directory keyed by the sources, TensorFlow's build
and the compile flags, so a machine compiles once per TensorFlow version and
source change (about half a minute). The CPU trainer of the built-in
skip-gram uses them (tpu_embeddings/training/fused_step.py, and
tpu_embeddings/models/skipgram_input.py for the pairs);
benchmarks/trainer_throughput.py measures them against the TensorFlow path.
The component image (kubeflow/Dockerfile) has no C++ compiler: a build
stage that has one runs this module (`python library.py`, the sources
alone) and the image carries the library in its cache. Whenever the
library cannot be had (`TPU_EMBEDDINGS_KERNELS=0`, no C++ compiler, a
failed build, a library that does not load) `load()` logs one line saying
why and returns None; callers then use their TensorFlow path, which
computes the same results.

The compile flags follow the machine: `-mavx` where the CPU has AVX (x86
with `avx` among /proc/cpuinfo's flags), no x86 flag elsewhere (arm64
builds the same sources for its own CPU). `status()` says whether the ops
loaded and, if not, why; the trainer records it in the Model's metadata.

Environment:
  TPU_EMBEDDINGS_KERNELS=0        never use the ops (the TensorFlow path only)
  TPU_EMBEDDINGS_KERNEL_CACHE     cache directory (default
                                  $XDG_CACHE_HOME/tpu_embeddings/kernels or
                                  ~/.cache/tpu_embeddings/kernels)
  TPU_EMBEDDINGS_KERNEL_CFLAGS    extra compiler flags (e.g. -march=native)
  CXX                             the compiler (default g++, then c++)
"""

import contextlib
import dataclasses
import fcntl
import functools
import glob
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from typing import Any, List, Optional

import tensorflow as tf
from absl import logging

SWITCH = 'TPU_EMBEDDINGS_KERNELS'
CACHE = 'TPU_EMBEDDINGS_KERNEL_CACHE'
EXTRA_FLAGS = 'TPU_EMBEDDINGS_KERNEL_CFLAGS'
LIBRARY_NAME = 'skipgram_ops.so'
FAILURE_NAME = 'build-failed.txt'
# The ops' Python wrappers the callers use.
OP_NAMES = ('skip_gram_keep', 'skip_gram_windows', 'skip_gram_shuffle',
            'skip_gram_step')
FLAGS = ('-shared', '-fPIC', '-O3')
# -fno-math-errno lets sqrt and division vectorize.
MATH_FLAGS = ('-fno-math-errno',)
# AVX (what TensorFlow's own x86 wheels require), where the CPU has it.
AVX_FLAGS = ('-mavx',)
X86_MACHINES = ('x86_64', 'amd64', 'i386', 'i686')
CPUINFO = '/proc/cpuinfo'
_OFF = ('0', 'off', 'false', 'no')


class BuildError(RuntimeError):
  """The sources did not compile or the library did not load."""


def source_files() -> List[str]:
  here = os.path.dirname(os.path.abspath(__file__))
  return sorted(glob.glob(os.path.join(here, '*.cc')) +
                glob.glob(os.path.join(here, '*.h')))


def compiler() -> Optional[str]:
  """The C++ compiler: $CXX, else g++ or c++ on PATH; None without one."""
  if os.environ.get('CXX'):
    return shutil.which(os.environ['CXX'])
  return shutil.which('g++') or shutil.which('c++')


def cpu_flags(machine: str, cpuinfo: str) -> List[str]:
  """The CPU's own flags: `-mavx` on an x86 `machine` whose `cpuinfo` (the
  text of /proc/cpuinfo) lists `avx`, none on others (arm64: no x86 flag)."""
  if machine.lower() not in X86_MACHINES:
    return []
  for line in cpuinfo.splitlines():
    name, _, value = line.partition(':')
    if name.strip() == 'flags':
      return list(AVX_FLAGS) if 'avx' in value.split() else []
  return []


def _cpuinfo() -> str:
  try:
    with open(CPUINFO, encoding='utf-8', errors='replace') as f:
      return f.read()
  except OSError:
    return ''


def flags() -> List[str]:
  """The compiler's flags (in an order that keeps earlier builds' keys)."""
  return (list(FLAGS) + cpu_flags(platform.machine(), _cpuinfo()) +
          list(MATH_FLAGS) + os.environ.get(EXTRA_FLAGS, '').split() +
          tf.sysconfig.get_compile_flags() + tf.sysconfig.get_link_flags())


def build_key() -> str:
  """Names one build: the sources, TensorFlow's build and the flags."""
  digest = hashlib.sha256()
  for path in source_files():
    digest.update(os.path.basename(path).encode() + b'\0')
    with open(path, 'rb') as f:
      digest.update(f.read() + b'\0')
  for part in [tf.version.VERSION, tf.version.GIT_VERSION] + flags():
    digest.update(part.encode() + b'\0')
  return f'tf{tf.version.VERSION}-{digest.hexdigest()[:16]}'


def cache_root() -> str:
  if os.environ.get(CACHE):
    return os.environ[CACHE]
  base = os.environ.get('XDG_CACHE_HOME') or os.path.join(
      os.path.expanduser('~'), '.cache')
  return os.path.join(base, 'tpu_embeddings', 'kernels')


def library_path(root: Optional[str] = None) -> str:
  return os.path.join(root or cache_root(), build_key(), LIBRARY_NAME)


@contextlib.contextmanager
def _locked(path: str):
  """Holds an exclusive lock on `path` (processes building at once wait)."""
  with open(path, 'a', encoding='utf-8') as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(f, fcntl.LOCK_UN)


def _compile(cxx: str, target: str):
  """Compiles the sources into `target` (written elsewhere, then renamed)."""
  directory = os.path.dirname(target)
  fd, partial = tempfile.mkstemp(prefix='.building-', suffix='.so',
                                 dir=directory)
  os.close(fd)
  sources = [p for p in source_files() if p.endswith('.cc')]
  command = [cxx] + sources + ['-o', partial] + flags()
  try:
    done = subprocess.run(command, capture_output=True, text=True,
                          check=False)
    if done.returncode:
      raise BuildError(f'{" ".join(command)}\nexit {done.returncode}\n'
                       f'{done.stderr[-4000:]}')
    os.replace(partial, target)
  finally:
    if os.path.exists(partial):
      os.remove(partial)


def build(root: Optional[str] = None) -> str:
  """Compiles the library into the cache unless it is there; its path.

  Raises BuildError without a compiler or when the sources do not compile
  (the compiler's output is kept next to where the library would be).
  """
  target = library_path(root)
  if os.path.exists(target):
    return target
  cxx = compiler()
  if not cxx:
    raise BuildError('no C++ compiler: install g++ or set CXX')
  directory = os.path.dirname(target)
  os.makedirs(directory, exist_ok=True)
  with _locked(os.path.join(directory, '.lock')):
    if os.path.exists(target):  # another process built it meanwhile
      return target
    failure = os.path.join(directory, FAILURE_NAME)
    try:
      _compile(cxx, target)
    except BuildError as e:
      with open(failure, 'w', encoding='utf-8') as f:
        f.write(f'{cxx}\n{e}\n')
      raise
    if os.path.exists(failure):
      os.remove(failure)
  return target


def _failed_before(cxx: str) -> Optional[str]:
  """The failure file of an earlier build with this compiler, if any."""
  failure = os.path.join(os.path.dirname(library_path()), FAILURE_NAME)
  if not os.path.exists(failure):
    return None
  with open(failure, encoding='utf-8') as f:
    return failure if f.readline().strip() == cxx else None


def _first_line(error: BaseException) -> str:
  text = str(error).strip()
  return text.splitlines()[0] if text else repr(error)


def _built_and_loaded():
  """Builds the library unless it is in the cache and loads it; raises
  BuildError (or the loader's error) when that gives no usable ops."""
  ops = tf.load_op_library(build())
  # A process that already loaded another build of these ops (another
  # cache, another copy of the package) gets no wrappers for them here.
  missing = [name for name in OP_NAMES if not hasattr(ops, name)]
  if missing:
    raise BuildError(f'{", ".join(missing)} already registered by another '
                     'build loaded in this process')
  return ops


@dataclasses.dataclass(frozen=True)
class Status:
  """The op library (None when it cannot be had) and why not ('' when
  loaded)."""
  ops: Any
  reason: str = ''


@functools.lru_cache(maxsize=None)
def status() -> Status:
  """The ops or why not, once per process (logged then)."""
  if os.environ.get(SWITCH, '').strip().lower() in _OFF:
    logging.info('Skip-gram CPU ops off (%s=%s): TensorFlow path', SWITCH,
                 os.environ[SWITCH])
    return Status(None, f'switched off ({SWITCH}={os.environ[SWITCH]})')
  path = library_path()
  if not os.path.exists(path):
    cxx = compiler()
    failed = _failed_before(cxx) if cxx else None
    if failed:
      logging.warning('Skip-gram CPU ops: an earlier build failed (%s); '
                      'TensorFlow path', failed)
      return Status(None, f'an earlier build failed ({failed})')
    logging.info('Skip-gram CPU ops: compiling once into %s', path)
  try:
    return Status(_built_and_loaded())
  except (BuildError, OSError, tf.errors.OpError) as e:
    logging.warning('Skip-gram CPU ops unavailable (%s); TensorFlow path',
                    _first_line(e))
    return Status(None, _first_line(e))


def load():
  """The op library, or None (logged once per process, saying why)."""
  return status().ops


def main() -> int:
  """Builds the library into the cache unless it is there, then loads it:
  what the image build (kubeflow/Dockerfile) and the Makefile's setup run,
  so that trainers find it built. Exits 1 with one line when it cannot."""
  try:
    _built_and_loaded()
  except (BuildError, OSError, tf.errors.OpError) as e:
    print(f'skip-gram CPU ops: {_first_line(e)} (for {library_path()}); the '
          "CPU trainer takes TensorFlow's slower ops", file=sys.stderr)
    return 1
  print(library_path())
  return 0


if __name__ == '__main__':
  sys.exit(main())
