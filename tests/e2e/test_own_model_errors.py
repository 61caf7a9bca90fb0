"""The two-tower example module's inputs and module file, broken: each run
ends with one line that names what to fix."""

import os

import pytest

from pipelines import demo_interactions
from pipelines.cli.main import main
from tests.support import interaction_fixtures
from tests.support import two_tower_home


def test_a_csv_row_with_an_extra_field_is_named_by_file_and_line(
    tmp_path, capsys):
  """CsvExampleGen's own message names neither."""
  data = tmp_path / 'data'
  demo_interactions.write_examples(str(data), two_tower_home.SHAPE, span=1)
  path = str(data / 'span-1' / 'train' / 'part-00000.csv')
  two_tower_home.edit_line(path, 7,
                           lambda line: line.rstrip(b'\r') + b',extra\r')
  assert main(['run', '--data', str(data), '--home', str(tmp_path / 'home')]
              + two_tower_home.FLAGS) == 2
  err = capsys.readouterr().err.strip()
  assert err == (
      f'error: FileBasedExampleGen failed: {path} line 7: 5 fields where the '
      'header has 4 (user_id,history,item_id,item_category); fix the row, or '
      'quote a field that holds a comma; nothing was pushed before'), err


def _broken_module(directory, old: str, new: str) -> str:
  """The example module with `old` replaced by `new`, in `directory`."""
  with open(interaction_fixtures.MODULE_FILE, encoding='utf-8') as f:
    source = f.read()
  assert old in source
  path = os.path.join(str(directory), 'my_model.py')
  with open(path, 'w', encoding='utf-8') as f:
    f.write(source.replace(old, new))
  return path


BROKEN = {
    # Refused as the run starts, before any component: the contract check
    # builds the serving model on an untrained instance.
    'signatures raising': (
        'def signatures(model, embed, ctx):\n',
        'def signatures(model, embed, ctx):\n  raise RuntimeError("boom")\n',
        '', 'signatures raised RuntimeError: boom'),
    'model_fn returning None': (
        '  del ctx\n  return TwoTower()\n', '  del ctx\n  return None\n',
        '', "signature 'serving_default' raised AttributeError: 'NoneType' "
        "object has no attribute 'query' (model was None: model_fn returned "
        'None)'),
    # Found by the trainer, which keeps what it did for the rerun.
    'loss_fn raising': (
        '  """In-batch softmax, logQ-corrected: this replica\'s share of the '
        'loss."""\n',
        '  """In-batch softmax."""\n  raise RuntimeError("boom")\n',
        'EmbeddingTrainer', 'loss_fn (on a zero batch, to create the '
        "model's variables) raised RuntimeError: boom"),
}


@pytest.mark.parametrize('case', sorted(BROKEN))
def test_a_failing_module_file_is_one_line_naming_it(tmp_path, capsys, case):
  old, new, node, what = BROKEN[case]
  module = _broken_module(tmp_path, old, new)
  demo_interactions.write_examples(str(tmp_path / 'data'),
                                   two_tower_home.SHAPE, span=1)
  argv = ['run', '--data', str(tmp_path / 'data'), '--home',
          str(tmp_path / 'home'), '--module-file', module,
          '--set', 'example_gen.format="csv"', '--set', 'batch_size=128',
          '--set', 'epochs=0', '--set', 'train_steps=4']
  assert main(argv) == 5
  err = [line for line in capsys.readouterr().err.splitlines()
         if line.startswith('error: ')]
  assert len(err) == 1, err
  if node:
    assert err[0].startswith(f'error: {node} failed: module file {module}: '
                             f'{what}; kept '), err[0]
  else:
    assert err[0] == f'error: module file {module}: {what}', err[0]
    assert not (tmp_path / 'home').exists()
