import os
import sys

import pytest

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
os.environ.setdefault('CUDA_VISIBLE_DEVICES', '')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_E2E = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'e2e') + os.sep


def pytest_collection_modifyitems(items):
  """Whole-pipeline runs under tests/e2e/ are slow: `-m "not slow"` skips them.
  """
  for item in items:
    if str(item.fspath).startswith(_E2E):
      item.add_marker(pytest.mark.slow)
