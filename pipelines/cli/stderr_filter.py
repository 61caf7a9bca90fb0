"""Drop TensorFlow's known-harmless import-time error lines from stderr.

Importing TensorFlow 2.15 logs three ERROR lines from XLA's C++ start-up on
every machine with the CUDA plugins installed, GPU or not:

    E ...cuda_dnn.cc:...] Unable to register cuDNN factory: Attempting to
    register factory for plugin cuDNN when one has already been registered

(and the same for cuFFT and cuBLAS). TF_CPP_MIN_LOG_LEVEL=3 would hide them,
and every real error with them. Instead, while `import tensorflow` runs, file
descriptor 2 goes to a temporary file; afterwards every line is written back
except exactly those three.

    stderr_filter.install()   # before anything imports TensorFlow
"""

import contextlib
import importlib.abc
import importlib.util
import os
import re
import sys
import tempfile
from typing import Iterator, Pattern

from pipelines.cli import wrapped_loader

# The duplicate-registration lines of the cuDNN, cuFFT and cuBLAS factories.
FACTORY_REGISTRATION = re.compile(
    rb'Unable to register cu(DNN|FFT|BLAS) factory: Attempting to register '
    rb'factory for plugin cu(DNN|FFT|BLAS) when one has already been '
    rb'registered')


def _flush():
  if sys.stderr is not None:
    sys.stderr.flush()


@contextlib.contextmanager
def dropping_lines(pattern: Pattern[bytes] = FACTORY_REGISTRATION,
                   fd: int = 2) -> Iterator[None]:
  """Within the block, lines written to `fd` that match `pattern` are dropped.

  Everything else reaches `fd`, in order, when the block ends (also when it
  raises).
  """
  _flush()
  try:
    saved = os.dup(fd)
  except OSError:  # no stderr to filter (closed)
    yield
    return
  with tempfile.TemporaryFile() as capture:
    os.dup2(capture.fileno(), fd)
    try:
      yield
    finally:
      _flush()
      os.dup2(saved, fd)
      os.close(saved)
      capture.seek(0)
      for line in capture:
        if not pattern.search(line):
          os.write(fd, line)


class _FilteringLoader(wrapped_loader.WrappedLoader):
  """Runs another loader's exec_module inside `dropping_lines()`."""

  def exec_module(self, module):
    self.hand_back(module)
    with dropping_lines():
      self.loader.exec_module(module)

  def __getattr__(self, name):
    return getattr(self.loader, name)


class _TensorFlowFinder(importlib.abc.MetaPathFinder):
  """Finds `tensorflow` like the other finders, loading it filtered; once."""

  def find_spec(self, fullname, path=None, target=None):
    if fullname != 'tensorflow':
      return None
    uninstall()
    spec = importlib.util.find_spec(fullname)
    if spec is not None and spec.loader is not None:
      spec.loader = _FilteringLoader(spec.loader)
    return spec


_FINDER = _TensorFlowFinder()


def install():
  """Filters the first `import tensorflow` (no-op once it is imported)."""
  if 'tensorflow' not in sys.modules and _FINDER not in sys.meta_path:
    sys.meta_path.insert(0, _FINDER)


def uninstall():
  if _FINDER in sys.meta_path:
    sys.meta_path.remove(_FINDER)
