"""pipelines/local/store_guard.py on real ML Metadata SQLite stores."""

import os
import shutil

import pytest
from ml_metadata.proto import metadata_store_pb2

from pipelines.local import home as home_lib
from pipelines.local import store_guard


def _new_execution_id(home: str) -> int:
  store = store_guard.open_store(home)
  type_id = store.put_execution_type(
      metadata_store_pb2.ExecutionType(name='Probe'))
  return store.put_executions([metadata_store_pb2.Execution(
      type_id=type_id)])[0]


def _output(home: str, node: str, number: int):
  path = os.path.join(home_lib.paths(home)['pipeline_root'], node, 'model',
                      str(number))
  os.makedirs(path)
  open(os.path.join(path, 'file'), 'w').close()


def test_a_fresh_home_is_paired_with_its_store(tmp_path):
  home = str(tmp_path / 'home')
  assert store_guard.check(home) is None
  marker = os.path.join(home, 'pipeline', store_guard.MARKER_FILENAME)
  with open(marker) as f:
    paired = f.read().strip()
  assert len(paired) == 32
  assert store_guard.check(home) is None
  assert _new_execution_id(home) == 1


def test_a_deleted_store_continues_past_every_output_folder(tmp_path):
  home = str(tmp_path / 'home')
  store_guard.check(home)
  _output(home, 'EmbeddingTrainer', 3)
  _output(home, 'CheckpointValidator', 12)
  os.remove(home_lib.metadata_path(home))
  note = store_guard.check(home)
  assert 'executions continue from id 13' in note
  assert _new_execution_id(home) == 13
  assert store_guard.check(home) is None


def test_an_older_copy_of_the_store_continues_past_newer_outputs(tmp_path):
  home = str(tmp_path / 'home')
  store_guard.check(home)
  _new_execution_id(home)
  backup = str(tmp_path / 'backup.sqlite')
  shutil.copy(home_lib.metadata_path(home), backup)
  for number in (2, 3, 4):
    _new_execution_id(home)
    _output(home, 'Vocabulary', number)
  shutil.copy(backup, home_lib.metadata_path(home))
  assert 'continue from id 5' in store_guard.check(home)
  assert _new_execution_id(home) == 5


def test_another_homes_store_is_refused(tmp_path):
  first, second = str(tmp_path / 'first'), str(tmp_path / 'second')
  store_guard.check(first)
  store_guard.check(second)
  shutil.copy(home_lib.metadata_path(first), home_lib.metadata_path(second))
  with pytest.raises(store_guard.StoreError,
                     match=r'metadata.sqlite belongs to another home'):
    store_guard.check(second)


def test_a_damaged_store_is_one_line_naming_the_file(tmp_path):
  home = tmp_path / 'home'
  home.mkdir()
  (home / 'metadata.sqlite').write_bytes(b'not a database' * 100)
  with pytest.raises(store_guard.StoreError) as e:
    store_guard.check(str(home))
  message = str(e.value)
  assert message.startswith(f'{home / "metadata.sqlite"} cannot be opened as '
                            'ML Metadata (file is not a database); ')
  assert '\n' not in message and len(message) < 300


def test_commands_reading_a_damaged_store_say_which_file(tmp_path, capsys):
  from pipelines.cli import main as cli
  home = tmp_path / 'home'
  home.mkdir()
  (home / 'metadata.sqlite').write_bytes(b'SQLite format 3\x00' + b'x' * 600)
  assert cli.main(['lineage', '--home', str(home)]) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'error: {home / "metadata.sqlite"} cannot be opened '
                        'as ML Metadata (')
  assert len(err.splitlines()) == 1 and len(err) < 400, err


def _tree(home) -> dict:
  """{relative path: bytes} of every file under a home."""
  found = {}
  for directory, _, files in os.walk(home):
    for name in files:
      path = os.path.join(directory, name)
      with open(path, 'rb') as f:
        found[os.path.relpath(path, home)] = f.read()
  return found


# Every command given a --home other than `run` (which test_another_homes_
# store_is_refused covers); {data} is a data root with one span.
HOME_COMMANDS = (
    ['lineage'],
    ['pushed'],
    ['pushed', '--verify'],
    ['embed', 'some text'],
    ['neighbors', 'token'],
    ['rollback', '--to', '1'],
    ['retrain', '--data', '{data}'],
)


@pytest.mark.parametrize('command', HOME_COMMANDS, ids=' '.join)
def test_every_command_refuses_another_homes_store_and_changes_nothing(
    tmp_path, capsys, command):
  from pipelines.cli import main as cli
  first, second = str(tmp_path / 'first'), str(tmp_path / 'second')
  store_guard.check(first)
  store_guard.check(second)
  shutil.copy(home_lib.metadata_path(first), home_lib.metadata_path(second))
  data = tmp_path / 'data' / 'span-1'
  data.mkdir(parents=True)
  (data / 'text.txt').write_text('a b c\n')
  before = _tree(second)
  argv = [a.format(data=data.parent) for a in command]
  assert cli.main(argv[:1] + ['--home', second] + argv[1:]) == 2
  err = capsys.readouterr().err
  assert err.startswith(f'error: {home_lib.metadata_path(second)} belongs to '
                        'another home'), err
  assert len(err.splitlines()) == 1, err
  assert _tree(second) == before


@pytest.mark.parametrize('store', ['paired', 'empty file'])
def test_lineage_only_reads_the_store(tmp_path, capsys, store):
  from pipelines.cli import main as cli
  home = tmp_path / 'home'
  if store == 'paired':
    store_guard.check(str(home))
    expected = 'no pushed version is recorded'
  else:  # e.g. a store that was being created when its disk filled up
    home.mkdir()
    (home / 'metadata.sqlite').write_bytes(b'')
    expected = f'no ML Metadata at {home / "metadata.sqlite"}'
  before = _tree(home)
  assert cli.main(['lineage', '--home', str(home)]) == 2
  assert expected in capsys.readouterr().err
  assert _tree(home) == before
