"""A home remembers its module file and settings; later runs reuse what
they are not given, and say so."""

import argparse
import hashlib
import json
import os

import pytest

from pipelines.cli import home_settings
from pipelines.local import home as home_lib
from pipelines.local import home_record


@pytest.fixture
def module_file(tmp_path):
  path = tmp_path / 'model.py'
  path.write_text('FEATURES = {}\n')
  return str(path)


def _first_run(tmp_path, module_file):
  home = str(tmp_path / 'home')
  os.makedirs(home)
  home_record.write(home, home_record.of_run(
      module_file, {'example_gen.format': 'csv', 'trainer.batch_size': 64}))
  return home


def test_the_record_holds_the_module_its_hash_copy_and_settings(
    tmp_path, module_file):
  home = _first_run(tmp_path, module_file)
  with open(os.path.join(home, 'home.json')) as f:
    written = json.load(f)
  assert written == {
      'module_file': module_file,
      'module_sha256': hashlib.sha256(b'FEATURES = {}\n').hexdigest(),
      'module_source': 'FEATURES = {}\n',
      'settings': {'example_gen.format': 'csv', 'trainer.batch_size': 64}}
  assert os.listdir(home) == ['home.json']  # no temporary file left


def test_nothing_given_reuses_the_module_and_every_setting(tmp_path,
                                                           module_file):
  home = _first_run(tmp_path, module_file)
  used, settings, note = home_record.merge(home_record.read(home), '', {})
  assert used == module_file
  assert settings == {'example_gen.format': 'csv', 'trainer.batch_size': 64}
  assert note == (f'reusing what the home records: module file '
                  f'{module_file}, example_gen.format="csv", '
                  'trainer.batch_size=64')


def test_what_is_given_wins_and_is_not_said_to_be_reused(tmp_path,
                                                         module_file):
  home = _first_run(tmp_path, module_file)
  other = tmp_path / 'other.py'
  other.write_text('FEATURES = {"a": "a"}\n')
  used, settings, note = home_record.merge(
      home_record.read(home), str(other), {'trainer.batch_size': 128})
  assert used == str(other)
  assert settings == {'example_gen.format': 'csv', 'trainer.batch_size': 128}
  assert note == 'reusing what the home records: example_gen.format="csv"'


def test_nothing_recorded_reuses_nothing(tmp_path):
  assert home_record.read(str(tmp_path)) is None
  assert home_record.merge(None, '', {'epochs': 2}) == ('', {'epochs': 2}, '')


def test_a_changed_module_file_is_used_and_said_to_start_the_dense_part_cold(
    tmp_path, module_file):
  home = _first_run(tmp_path, module_file)
  with open(module_file, 'a') as f:
    f.write('SETTINGS = {}\n')
  used, _, note = home_record.merge(home_record.read(home), '', {})
  assert used == module_file
  assert (f'module file {module_file} (changed since it was recorded: the '
          'dense part starts cold)') in note


def test_a_gone_module_file_is_one_line_naming_it_and_the_fix(tmp_path,
                                                              module_file):
  home = _first_run(tmp_path, module_file)
  os.remove(module_file)
  with pytest.raises(FileNotFoundError) as e:
    home_record.merge(home_record.read(home), '', {})
  assert module_file in str(e.value) and '--module-file' in str(e.value)
  assert '\n' not in str(e.value)


@pytest.mark.parametrize('text', [
    b'{"module_file": "/m.py", ', b'\xff\xfe', b'[1, 2]',
    b'{"module_file": 3, "settings": {}}', b'{"settings": []}',
    b'{"modul_file": "/m.py"}'])
def test_a_damaged_record_is_refused_in_one_line(tmp_path, text):
  (tmp_path / 'home.json').write_bytes(text)
  with pytest.raises(ValueError) as e:
    home_record.read(str(tmp_path))
  message = str(e.value)
  assert message.startswith(
      f'home record {home_lib.record_path(str(tmp_path))} is damaged')
  assert '\n' not in message and '--module-file' in message


def _args(home, *sets):
  return argparse.Namespace(home=home, module_file='', config=None,
                            set=list(sets), tpu=None)


def test_a_later_run_says_what_it_reuses_and_records_what_it_is_given(
    tmp_path, capsys):
  home = str(tmp_path / 'home')
  first = home_settings.resolve(_args(home, 'trainer.window=3'), 'run')
  assert capsys.readouterr().out == ''
  os.makedirs(home)
  home_settings.record(home, first)
  later = home_settings.resolve(_args(home, 'epochs=2'), 'retrain')
  assert capsys.readouterr().out == (
      'retrain: reusing what the home records: trainer.window=3\n')
  assert (later.config.trainer.window, later.config.trainer.epochs) == (3, 2)
  home_settings.record(home, later)
  assert home_record.read(home).settings == {'trainer.window': 3,
                                             'epochs': 2}
