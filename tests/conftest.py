import collections
import os
import sys

import pytest

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('CUDA_VISIBLE_DEVICES', '')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tpu_embeddings.core import import_gc  # noqa: E402 (after the path)

# Collecting imports every test module, and with them TensorFlow and TFX:
# with the collector paused, as the CLI imports them.
_resume_gc = import_gc.pause()

_E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'e2e') + os.sep


def pytest_collection_modifyitems(items):
  """Whole-pipeline runs under tests/e2e/ are slow: `-m "not slow"` skips them.

  Files of slow tests only come first (whole-pipeline runs, benchmark
  smoke runs), then files with some slow tests, then the rest. The
  Makefile's two workers take whole files in this order (`--dist loadfile
  --no-loadscope-reorder`), so they start on the long files and end on
  short ones, instead of one worker running a long file alone at the end.
  """
  for item in items:
    if str(item.fspath).startswith(_E2E):
      item.add_marker(pytest.mark.slow)
  slow = collections.defaultdict(set)
  for item in items:
    slow[item.path].add(bool(item.get_closest_marker('slow')))
  items.sort(key=lambda item: (True not in slow[item.path],
                               False in slow[item.path]))


def pytest_collection_finish(session):
  del session
  _resume_gc()


def pytest_xdist_setupnodes(config, specs):
  """The controller of `-n 2` collects nothing: it resumes here."""
  del config, specs
  _resume_gc()
