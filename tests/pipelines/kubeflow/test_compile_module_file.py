"""Compiling with a module file: packaged as a wheel under the pipeline root,
the trainer task given its `module_path`, and that path loads the module as
the task's container does (TFX's udf_utils installs the wheel)."""

import glob
import os
import shutil
import tempfile
import zipfile

import pytest
import yaml
from tfx.components.util import udf_utils

from components import keys
from components import module_file as module_file_lib
from pipelines.cli import main as cli
from tests.support import paths
from tests.support.compiled_package import IMAGE

MODULE = os.path.join(paths.REPO, 'examples', 'two_tower',
                      'two_tower_model.py')


def _trainer_module_path(package: str) -> str:
  with open(package) as f:
    spec = next(yaml.safe_load_all(f))
  found = []
  for name, component in spec['components'].items():
    params = component.get('inputDefinitions', {}).get('parameters', {})
    if module_file_lib.MODULE_PATH_KEY in params:
      found.append(name)
  assert found == ['EmbeddingTrainer'], found
  task = spec['root']['dag']['tasks']['EmbeddingTrainer']
  value = task['inputs']['parameters'][module_file_lib.MODULE_PATH_KEY]
  return value['runtimeValue']['constant']


def test_compile_packages_the_module_file_as_the_trainer_loads_it(
    tmp_path, capfd, monkeypatch):
  temporary = tmp_path / 'tmp'
  temporary.mkdir()
  monkeypatch.setattr(tempfile, 'tempdir', str(temporary))
  root = tmp_path / 'root'
  out = tmp_path / 'pipeline.yaml'
  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', str(root), '--module-file', MODULE])
  printed = capfd.readouterr()
  assert rc == 0, printed.err
  # The wheel build's own output stays out of the terminal; the contract
  # check says what it checked.
  assert [line.split()[0] for line in printed.out.splitlines()] == [
      'module', 'wrote', 'requests', 'run-time'], printed.out
  wheels = glob.glob(str(root / '_wheels' / '*.whl'))
  assert len(wheels) == 1, wheels
  # No folder of the wheel's build is left in the temporary folder. The
  # files autograph writes there go when the process exits; where bytecode
  # is written, TensorFlow's import of them leaves __pycache__ too.
  left = [p for p in temporary.iterdir()
          if p.is_dir() and p.name != '__pycache__']
  assert not left, left
  module_path = _trainer_module_path(str(out))
  assert module_path == f'two_tower_model@{wheels[0]}'
  # What the trainer task does with it, in a fresh install location.
  module = module_file_lib.from_exec_properties(
      {module_file_lib.MODULE_PATH_KEY: module_path})
  assert not module.builtin
  assert udf_utils.get_fn({module_file_lib.MODULE_PATH_KEY: module_path},
                          'embedding_spec') is not None


def test_compile_refuses_a_missing_module_file(tmp_path, capsys):
  rc = cli.main(['compile', '--output', str(tmp_path / 'p.yaml'),
                 '--image', IMAGE, '--pipeline-root', str(tmp_path / 'root'),
                 '--module-file', str(tmp_path / 'nope.py')])
  assert rc == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and 'nope.py: no such file' in err[0], err
  assert not (tmp_path / 'p.yaml').exists()


def test_an_unwritable_pipeline_root_is_one_line(tmp_path, capsys):
  blocker = tmp_path / 'a-file'
  blocker.write_text('not a folder')
  rc = cli.main(['compile', '--output', str(tmp_path / 'p.yaml'),
                 '--image', IMAGE, '--pipeline-root', str(blocker / 'tfx'),
                 '--module-file', MODULE])
  err = capsys.readouterr().err.strip().splitlines()
  assert rc == 2 and len(err) == 1, (rc, err)
  assert "cannot write the module file's wheel" in err[0], err
  assert not (tmp_path / 'p.yaml').exists()


@pytest.mark.slow
def test_compile_packages_the_module_file_alone(tmp_path, capsys):
  """Nothing beside the module file goes into the wheel (a project folder's
  scripts, a helper holding credentials), and the trainer is told the path
  its user gave, to name it in errors."""
  folder = tmp_path / 'project'
  folder.mkdir()
  module = folder / 'my_model.py'
  shutil.copy(MODULE, module)
  (folder / 'deploy_helper.py').write_text('TOKEN = "do-not-ship"\n')
  (folder / '__init__.py').write_text('')
  root = tmp_path / 'root'
  out = tmp_path / 'pipeline.yaml'
  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', str(root), '--module-file', str(module)])
  assert rc == 0, capsys.readouterr().err
  wheels = glob.glob(str(root / '_wheels' / '*.whl'))
  assert len(wheels) == 1, wheels
  with zipfile.ZipFile(wheels[0]) as wheel:
    names = wheel.namelist()
    assert [n for n in names if n.endswith('.py')] == ['my_model.py'], names
    assert not any(b'do-not-ship' in wheel.read(n) for n in names)
  with open(out) as f:
    assert 'do-not-ship' not in f.read()
  with open(out) as f:
    spec = next(yaml.safe_load_all(f))
  params = spec['root']['dag']['tasks']['EmbeddingTrainer']['inputs'][
      'parameters']
  assert params[keys.MODULE_SOURCE_FILE]['runtimeValue']['constant'] == str(
      module)
  assert _trainer_module_path(str(out)) == f'my_model@{wheels[0]}'
