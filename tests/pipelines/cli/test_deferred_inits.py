"""A deferred package imports its submodules without running its __init__,
and runs it on the first name only the __init__ defines."""

import importlib
import json
import os
import subprocess
import sys
import uuid

import pytest

from pipelines.cli import deferred_inits
from tests.support import paths


@pytest.fixture
def package(tmp_path, monkeypatch):
  """A package whose __init__ notes each run in `ran`; its name is new, so
  no other test has imported it."""
  name = f'deferred_{uuid.uuid4().hex[:8]}'
  root = tmp_path / name
  root.mkdir()
  ran = tmp_path / 'ran'
  (root / '__init__.py').write_text(
      f'with open({str(ran)!r}, "a") as f:\n'
      '  f.write("init\\n")\n'
      'FROM_INIT = "defined by __init__"\n'
      f'from {name} import helper as bound_helper\n')
  (root / 'light.py').write_text('VALUE = 1\n')
  (root / 'helper.py').write_text('VALUE = 2\n')
  monkeypatch.syspath_prepend(str(tmp_path))
  yield name, ran
  for module in [m for m in sys.modules if m.split('.')[0] == name]:
    del sys.modules[module]


@pytest.fixture
def deferred(package):
  finder = deferred_inits.install([package[0]])
  yield package
  deferred_inits.uninstall(finder)


def test_a_submodule_imports_without_the_init(deferred):
  name, ran = deferred
  light = importlib.import_module(f'{name}.light')
  assert light.VALUE == 1
  package = sys.modules[name]
  assert package.light is light
  assert not ran.exists()


def test_from_import_of_a_submodule_leaves_the_init_alone(deferred):
  name, ran = deferred
  namespace = {}
  exec(f'from {name} import light', namespace)
  assert namespace['light'].VALUE == 1
  assert not ran.exists()


def test_a_name_of_the_init_runs_it_once(deferred):
  name, ran = deferred
  importlib.import_module(f'{name}.light')
  package = sys.modules[name]
  assert package.FROM_INIT == 'defined by __init__'
  assert package.bound_helper.VALUE == 2
  assert package.light.VALUE == 1
  assert ran.read_text() == 'init\n'
  with pytest.raises(AttributeError):
    package.missing  # noqa: B018
  assert ran.read_text() == 'init\n'


def test_a_missing_name_is_an_attribute_error(deferred):
  name, _ = deferred
  package = importlib.import_module(name)
  with pytest.raises(AttributeError, match='missing'):
    package.missing  # noqa: B018


def test_other_packages_run_their_init(package):
  name, ran = package
  finder = deferred_inits.install(['some_other_package'])
  try:
    importlib.import_module(f'{name}.light')
  finally:
    deferred_inits.uninstall(finder)
  assert ran.read_text() == 'init\n'


def test_an_imported_package_is_left_as_it_is(package):
  name, ran = package
  importlib.import_module(name)
  finder = deferred_inits.install([name])
  deferred_inits.uninstall(finder)
  assert not finder.names
  assert ran.read_text() == 'init\n'


@pytest.mark.slow
def test_the_modules_of_a_run_leave_every_deferred_init_unrun():
  """What `run` imports to build and run the pipeline: each package of
  DEFERRED it imports keeps its __init__ unrun (an entry whose __init__
  runs anyway buys nothing), and TFX's other components stay unimported."""
  code = ('import json, sys\n'
          'from pipelines.cli import deferred_inits\n'
          'deferred_inits.install()\n'
          'from pipelines.local import runner\n'
          'from pipelines import pipeline\n'
          'from components import module_file\n'
          'print(json.dumps({\n'
          '    "imported": [n for n in deferred_inits.DEFERRED\n'
          '                 if n in sys.modules],\n'
          '    "init_ran": [n for n in deferred_inits.DEFERRED\n'
          '                 if n in sys.modules and\n'
          '                 "__getattr__" not in vars(sys.modules[n])],\n'
          '    "bulk_inferrer": "tfx.components.bulk_inferrer" in '
          'sys.modules}))\n')
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONWARNINGS='ignore')
  done = subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, env=env, timeout=300, cwd=paths.REPO)
  assert done.returncode == 0, done.stderr
  found = json.loads(done.stdout.splitlines()[-1])
  assert found['init_ran'] == []
  assert set(found['imported']) == set(deferred_inits.DEFERRED)
  assert not found['bulk_inferrer']
