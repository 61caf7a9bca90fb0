"""Damage that TensorFlow loads without an error, and damaged manifests:
`pushed`, `embed`, `neighbors` and `rollback` through the real CLI, on
versions pushed from real exports (tests/support/pushed_home.py)."""

import json
import os
import shutil

import pytest

from pipelines.cli import main as cli
from pipelines.local import home as home_lib
from tests.support import pushed_home


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  return pushed_home.push_two_versions(str(tmp_path_factory.mktemp('damage')))


@pytest.fixture
def home(tmp_path, pushed):
  """A private copy of the push root (versions 1 and 2) to damage."""
  home = str(tmp_path / 'home')
  pushed_home.copy_home(pushed['root'], home)
  return home


def _cli(capsys, *argv):
  code = cli.main(list(argv))
  out, err = capsys.readouterr()
  return code, out, err


def _path(home, *parts):
  return os.path.join(home_lib.push_root(home), *parts)


def _swap_lines(path, first, second):
  with open(path) as f:
    lines = f.read().split('\n')
  i, j = lines.index(first), lines.index(second)
  lines[i], lines[j] = lines[j], lines[i]
  with open(path, 'w') as f:
    f.write('\n'.join(lines))


def _pushed_lines(capsys, home, *flags):
  code, out, _ = _cli(capsys, 'pushed', '--home', home, *flags)
  return code, out.splitlines()


@pytest.mark.slow
def test_swapped_vocabulary_lines_are_never_served(home, capsys):
  """Same size, so only a checksum sees it: the vectors of 'cat' would
  answer for 'dog'."""
  vocabulary = _path(home, 'serving', '2', 'assets', 'vocabulary.txt')
  _swap_lines(vocabulary, 'cat', 'dog')
  code, out, err = _cli(capsys, 'neighbors', '--home', home, 'cat')
  assert code == 1 and out == ''
  assert len(err.strip().splitlines()) == 1, err
  assert ('damaged: serving/2/assets/vocabulary.txt has other bytes than its '
          'manifest records') in err
  assert '--to 1`' in err
  code, lines = _pushed_lines(capsys, home)
  assert code == 1
  served = next(l for l in lines if l.startswith('      2'))
  assert '(served)  DAMAGED' in served
  code, _, err = _cli(capsys, 'embed', '--home', home, '--version', '1', 'cat')
  assert code == 0, err


@pytest.mark.slow
def test_a_changed_saved_model_pb_is_never_served(home, capsys):
  path = _path(home, 'serving', '2', 'saved_model.pb')
  with open(path, 'r+b') as f:
    f.seek(-1, os.SEEK_END)
    last = f.read(1)
    f.seek(-1, os.SEEK_END)
    f.write(bytes([last[0] ^ 1]))
  code, _, err = _cli(capsys, 'embed', '--home', home, 'the cat')
  assert code == 1
  assert 'serving/2/saved_model.pb has other bytes' in err


def test_a_version_without_saved_model_pb_is_served_and_reported(home,
                                                                 capsys):
  """TF Serving picks the highest numbered folder, complete or not."""
  os.remove(_path(home, 'serving', '2', 'saved_model.pb'))
  code, lines = _pushed_lines(capsys, home)
  assert code == 1
  v2 = next(l for l in lines if l.startswith('      2'))
  assert '(served)  DAMAGED' in v2
  assert '         damaged: serving/2/saved_model.pb is missing' in lines
  assert lines[-1].startswith('served version 2 is damaged (TF Serving serves '
                              'the highest version)')
  assert '(served)' not in next(l for l in lines if l.startswith('      1'))
  code, _, err = _cli(capsys, 'embed', '--home', home, 'the cat')
  assert code == 1 and 'serving/2/saved_model.pb is missing' in err
  assert '--to 1`' in err


def test_verify_exits_non_zero_only_when_something_is_damaged(home, capsys):
  assert _pushed_lines(capsys, home, '--verify')[0] == 0
  data = _path(home, 'hub', '1', 'variables',
               'variables.data-00000-of-00001')
  with open(data, 'r+b') as f:
    f.write(b'\x00\x00\x00\x00')
  assert _pushed_lines(capsys, home)[0] == 0  # sizes match
  code, lines = _pushed_lines(capsys, home, '--verify')
  assert code == 1
  assert lines[-1] == 'damaged versions: 1 (do not roll back to them)'
  code, _, err = _cli(capsys, 'rollback', '--home', home, '--to', '1')
  assert code == 1 and 'cannot roll back to version 1' in err


def test_manifest_paths_outside_the_version_are_never_followed(home, capsys):
  path = _path(home, 'serving', '2', 'manifest.json')
  with open(path) as f:
    manifest = json.load(f)
  outside = '../../../../etc/passwd'
  manifest['files'][outside] = '0' * 64
  manifest['sizes'][outside] = os.path.getsize('/etc/passwd')
  with open(path, 'w') as f:
    json.dump(manifest, f)
  for flags in ((), ('--verify',)):
    code, lines = _pushed_lines(capsys, home, *flags)
    assert code == 1
    assert any(l.startswith('         damaged: serving/2/manifest.json names '
                            f"the file '{outside}', which has an empty, "
                            '"." or ".." segment') for l in lines), lines
  code, _, err = _cli(capsys, 'rollback', '--home', home, '--to', '2')
  assert code == 1 and 'cannot roll back to version 2' in err


def test_a_manifest_that_is_not_json_marks_only_its_version(home, capsys):
  with open(_path(home, 'serving', '1', 'manifest.json'), 'w') as f:
    f.write('{"version": 1,')
  code, out, err = _cli(capsys, 'pushed', '--home', home)
  assert code == 1 and err == ''
  lines = out.splitlines()
  assert '(served)' in next(l for l in lines if l.startswith('      2'))
  assert 'DAMAGED' in next(l for l in lines if l.startswith('      1'))
  assert any(l.startswith('         damaged: serving/1/manifest.json is not '
                          'valid JSON (') for l in lines), lines
  code, out, _ = _cli(capsys, 'pushed', '--home', home, '--json')
  listed = {v['version']: v for v in json.loads(out)}
  assert code == 1 and listed[1]['manifest'] is None
  assert listed[1]['state'] == 'damaged' and listed[2]['state'] == 'intact'


# -- A version is exactly its manifest: nothing more, nothing through a link.

def test_an_extra_file_damages_its_version_and_is_never_rolled_back(home,
                                                                   capsys):
  with open(_path(home, 'serving', '2', 'extra.txt'), 'w') as f:
    f.write('hi\n')
  for flags in ((), ('--verify',)):
    code, lines = _pushed_lines(capsys, home, *flags)
    assert code == 1
    assert ('         damaged: serving/2/extra.txt is not named in its '
            'manifest') in lines, lines
  code, _, err = _cli(capsys, 'embed', '--home', home, 'the cat')
  assert code == 1 and 'serving/2/extra.txt is not named' in err
  assert '--to 1`' in err
  code, _, err = _cli(capsys, 'rollback', '--home', home, '--to', '2')
  assert code == 1 and 'cannot roll back to version 2' in err
  assert not os.path.exists(_path(home, 'serving', '3'))


def test_damage_in_the_hub_half_only_is_never_served(home, capsys):
  vocabulary = _path(home, 'hub', '2', 'assets', 'vocabulary.txt')
  _swap_lines(vocabulary, 'cat', 'dog')
  for command in (('embed', '--home', home, 'the cat'),
                  ('neighbors', '--home', home, 'cat')):
    code, out, err = _cli(capsys, *command)
    assert code == 1 and out == '', (command, out, err)
    assert ('damaged: hub/2/assets/vocabulary.txt has other bytes than its '
            'manifest records') in err
    assert '--to 1`' in err


def test_a_file_symlinked_out_of_its_version_is_damage(home, tmp_path, capsys):
  vocabulary = _path(home, 'serving', '2', 'assets', 'vocabulary.txt')
  outside = str(tmp_path / 'vocabulary.txt')
  os.rename(vocabulary, outside)
  os.symlink(outside, vocabulary)  # the same bytes, from elsewhere
  code, lines = _pushed_lines(capsys, home)
  assert code == 1
  assert (f'         damaged: serving/2/assets/vocabulary.txt is a symlink to '
          f'{outside}, outside the version') in lines, lines
  code, _, err = _cli(capsys, 'embed', '--home', home, 'the cat')
  assert code == 1 and 'is a symlink to' in err


def test_a_symlinked_version_folder_is_judged_alone(home, tmp_path, capsys):
  """TF Serving follows `serving/3` to another folder: served, damaged, and
  the other versions still listed."""
  for kind in ('serving', 'hub'):
    copy = str(tmp_path / f'copy-{kind}')
    shutil.copytree(_path(home, kind, '1'), copy)
    os.symlink(copy, _path(home, kind, '3'))
  code, lines = _pushed_lines(capsys, home)
  assert code == 1
  assert '(served)  DAMAGED' in next(l for l in lines
                                     if l.startswith('      3'))
  assert any(l.startswith(f'         damaged: serving/3 is a symlink to '
                          f'{tmp_path}/copy-serving') for l in lines), lines
  assert 'DAMAGED' not in next(l for l in lines if l.startswith('      2'))
  code, out, _ = _cli(capsys, 'pushed', '--home', home, '--json')
  assert code == 1
  assert {v['version']: v['state'] for v in json.loads(out)} == {
      1: 'intact', 2: 'intact', 3: 'damaged'}
  code, _, err = _cli(capsys, 'embed', '--home', home, 'the cat')
  assert code == 1 and 'serving/3 is a symlink' in err and '--to 2`' in err


def test_a_folder_tf_serving_reads_as_a_higher_version_is_the_served_one(
    home, capsys):
  """`serving/0099` is version 99 to TF Serving, above 2."""
  shutil.copytree(_path(home, 'serving', '1'), _path(home, 'serving', '0099'))
  code, lines = _pushed_lines(capsys, home)
  assert code == 1
  v99 = next(l for l in lines if l.startswith('     99'))
  assert '(served)  DAMAGED' in v99
  assert '(served)' not in next(l for l in lines if l.startswith('      2'))
  assert any(l.startswith('         damaged: serving/0099 reads as version '
                          '99 (TF Serving') for l in lines), lines
  assert lines[-1].startswith('served version 99 is damaged')
  code, _, err = _cli(capsys, 'embed', '--home', home, 'the cat')
  assert code == 1 and 'pushed version 99' in err and '--to 2`' in err


def test_rollback_to_a_version_without_saved_model_pb_is_damage(home, capsys):
  os.remove(_path(home, 'serving', '1', 'saved_model.pb'))
  code, _, err = _cli(capsys, 'rollback', '--home', home, '--to', '1')
  assert code == 1, err
  assert 'cannot roll back to version 1' in err
  assert 'serving/1/saved_model.pb is missing' in err
  code, _, err = _cli(capsys, 'rollback', '--home', home, '--to', '7')
  assert code == 2 and 'no such pushed version' in err
