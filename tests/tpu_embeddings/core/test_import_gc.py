"""The collector is off while a block imports, and what the import left alive
is frozen afterwards, only when something was imported."""

import gc
import sys

import pytest

from tpu_embeddings.core import import_gc


@pytest.fixture
def collector():
  """Restores the collector's state and thaws what a test froze."""
  was_enabled = gc.isenabled()
  yield
  gc.unfreeze()
  if was_enabled:
    gc.enable()
  else:
    gc.disable()


def _new_module(tmp_path, monkeypatch, name):
  (tmp_path / f'{name}.py').write_text(
      'HELD = [[i] for i in range(1000)]\n', encoding='utf-8')
  monkeypatch.syspath_prepend(str(tmp_path))
  monkeypatch.delitem(sys.modules, name, raising=False)


def test_an_import_runs_with_the_collector_off_and_is_frozen_after(
    collector, tmp_path, monkeypatch):
  _new_module(tmp_path, monkeypatch, 'import_gc_probe_a')
  gc.enable()
  gc.unfreeze()
  with import_gc.paused():
    inside = gc.isenabled()
    import import_gc_probe_a
  assert not inside
  assert gc.isenabled()
  # The module's thousand lists are in the permanent generation now.
  assert gc.get_freeze_count() >= 1000
  walked = {id(o) for o in gc.get_objects()}
  assert id(import_gc_probe_a.HELD[0]) not in walked


def test_a_block_that_imports_nothing_freezes_nothing(collector):
  gc.enable()
  gc.unfreeze()
  with import_gc.paused():
    import json  # noqa: F401 (imported already)
  assert gc.get_freeze_count() == 0
  assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector, tmp_path,
                                            monkeypatch):
  _new_module(tmp_path, monkeypatch, 'import_gc_probe_b')
  gc.disable()
  resume = import_gc.pause()
  import import_gc_probe_b  # noqa: F401
  resume()
  frozen = gc.get_freeze_count()
  resume()  # a second call does nothing
  assert not gc.isenabled()
  assert frozen >= 1000 and gc.get_freeze_count() == frozen
