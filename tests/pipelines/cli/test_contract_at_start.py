"""A module file that breaks the model contract is refused as `run`,
`retrain` and `compile` start: one line naming the user's file, before TFX
starts, with nothing written into the home or the package."""

import os

import pytest

from pipelines import demo_interactions
from pipelines.cli import main as cli
from tests.support import interaction_fixtures
from tests.support.compiled_package import IMAGE

SHAPE = demo_interactions.Shape(items=30, categories=4, sequences=20,
                                min_length=3, max_length=5)
NO_DEFAULT = ("{'serving_default': query", "{'query': query")
RAISING = ('def signatures(model, embed, ctx):\n',
           'def signatures(model, embed, ctx):\n  raise RuntimeError("boom")\n')


def _module(directory, old: str, new: str) -> str:
  with open(interaction_fixtures.MODULE_FILE, encoding='utf-8') as f:
    source = f.read()
  assert old in source
  path = os.path.join(str(directory), 'my_model.py')
  with open(path, 'w', encoding='utf-8') as f:
    f.write(source.replace(old, new, 1))
  return path


def _errors(capsys):
  return [line for line in capsys.readouterr().err.splitlines()
          if line.startswith('error: ')]


@pytest.mark.parametrize('command', ['run', 'retrain'])
def test_a_module_without_serving_default_is_refused_before_tfx(
    tmp_path, capsys, command):
  module = _module(tmp_path, *NO_DEFAULT)
  demo_interactions.write_examples(str(tmp_path / 'data'), SHAPE, span=1)
  home = tmp_path / 'home'
  assert cli.main([command, '--data', str(tmp_path / 'data'), '--home',
                   str(home), '--module-file', module,
                   '--set', 'example_gen.format="csv"']) == 2
  assert _errors(capsys) == [
      f"error: module file {module}: signatures: give a 'serving_default' "
      'signature (what TF Serving answers when a request names none)']
  made = sorted(os.listdir(home)) if home.exists() else []
  assert not {'metadata.sqlite', 'pipeline', 'pushed'} & set(made), made


def test_a_signature_that_raises_is_user_code_named_at_run_start(
    tmp_path, capsys):
  module = _module(tmp_path, *RAISING)
  demo_interactions.write_examples(str(tmp_path / 'data'), SHAPE, span=1)
  assert cli.main(['run', '--data', str(tmp_path / 'data'), '--home',
                   str(tmp_path / 'home'), '--module-file', module,
                   '--set', 'example_gen.format="csv"']) == 5
  assert _errors(capsys) == [f'error: module file {module}: signatures '
                             'raised RuntimeError: boom']
  assert not (tmp_path / 'home').exists()


def test_compile_refuses_a_module_without_serving_default(tmp_path, capsys):
  module = _module(tmp_path, *NO_DEFAULT)
  out = tmp_path / 'pipeline.yaml'
  assert cli.main(['compile', '--output', str(out), '--image', IMAGE,
                   '--pipeline-root', str(tmp_path / 'root'),
                   '--module-file', module]) == 2
  errors = _errors(capsys)
  assert len(errors) == 1 and errors[0].startswith(
      f"error: module file {module}: signatures: give a 'serving_default'"), (
          errors)
  assert not out.exists() and not (tmp_path / 'root').exists()
