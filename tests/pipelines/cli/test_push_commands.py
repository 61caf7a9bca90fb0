"""`pushed`, `embed`, `neighbors` and `rollback` through the real CLI, on
versions pushed from real exports."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub

from pipelines.cli import main as cli
from pipelines.local import home as home_lib
from tests.support import paths
from tests.support import pushed_home
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import publish


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  return pushed_home.push_two_versions(str(tmp_path_factory.mktemp('consumer')))


def _cli(capsys, *argv):
  code = cli.main(list(argv))
  out, err = capsys.readouterr()
  return code, out, err


@pytest.mark.slow
def test_cli_pushed_embed_neighbors(pushed, capsys):
  code, out, _ = _cli(capsys, 'pushed', '--home', pushed['home'], '--json')
  assert code == 0
  listed = json.loads(out)
  assert [v['version'] for v in listed] == [1, 2]
  assert listed[0]['manifest']['pipeline_run_id'] == 'r1'
  code, out, _ = _cli(capsys, 'pushed', '--push-root', pushed['root'])
  assert code == 0 and '(served)' in out and 'neighbor_recall=0.2' in out

  code, out, err = _cli(capsys, 'embed', '--home', pushed['home'],
                        '--version', '1', 'the cat sat', 'dog')
  assert code == 0 and 'pushed version 1' in err
  lines = out.splitlines()
  assert [l.split('\t')[0] for l in lines] == ['the cat sat', 'dog']
  np.testing.assert_allclose(
      [float(x) for x in lines[0].split('\t')[1].split()],
      pushed_home.sentence_vector(pushed['tables'][1], 'the cat sat'),
      atol=1e-5)

  # Tokens the vocabulary lacks are named, not silently zero.
  code, out, err = _cli(capsys, 'embed', '--home', pushed['home'],
                        'The cat sat', 'dog', '--json')
  assert code == 0
  assert [e['unknown_tokens'] for e in json.loads(out)['embeddings']] == [
      ['The'], []]
  code, _, err = _cli(capsys, 'embed', '--home', pushed['home'], 'dog',
                      'The caat sat')
  assert code == 0
  assert ('warning: text 2: 2 of 3 tokens not in the vocabulary (zero '
          'vectors): The caat; tokens are case-sensitive') in err
  assert 'text 1' not in err

  code, out, _ = _cli(capsys, 'neighbors', '--home', pushed['home'], 'dog',
                      '-k', '2', '--json')
  assert code == 0
  got = json.loads(out)
  assert got['version'] == 2
  assert [n['token'] for n in got['neighbors']] == pushed_home.cosine_neighbors(
      pushed['tables'][2], 'dog', 2)[0]


@pytest.mark.parametrize('argv,match', [
    (['embed', '--version', '9', 'cat'], 'version 9 is not a pushed version'),
    (['embed', '--version', '../1', 'cat'], 'escapes the push root'),
    (['neighbors', 'zebra'], "'zebra' is not in the vocabulary"),
    (['neighbors', '-k', '0', 'cat'], 'k must be an integer >= 1'),
    (['neighbors', '-k', '3000000000', 'cat'], 'and <= 2147483647'),
    (['neighbors', 'two tokens'], 'give one token without whitespace'),
    # A Unicode space is part of a token, as in the corpus.
    (['neighbors', 'cat\u00a0dog'], "'cat\\xa0dog' is not in the vocabulary"),
    (['rollback', '--to', '/etc'], 'escapes the push root'),
    (['rollback', '--to', '7'], 'cannot roll back to version 7'),
])
def test_cli_errors_are_one_line(pushed, capsys, argv, match):
  code, out, err = _cli(capsys, argv[0], '--home', pushed['home'], *argv[1:])
  assert code == 2 and out == ''
  assert err.startswith('error: ') and match in err
  assert len(err.strip().splitlines()) == 1


def test_cli_on_an_empty_home(tmp_path, capsys):
  code, out, _ = _cli(capsys, 'pushed', '--home', str(tmp_path))
  assert code == 0 and 'nothing pushed' in out
  code, _, err = _cli(capsys, 'embed', '--home', str(tmp_path), 'cat')
  assert code == 2 and 'has no pushed version' in err


def test_rollback_serves_the_old_vectors_as_a_new_version(tmp_path, pushed,
                                                          capsys):
  # A private copy of the push root: rollback writes to it.
  home = str(tmp_path / 'home')
  root = pushed_home.copy_home(pushed['root'], home)
  code, out, _ = _cli(capsys, 'rollback', '--home', home, '--to', '1')
  assert code == 0 and 're-published as version 3' in out
  assert push_layout.list_versions(root, 'hub') == [1, 2, 3]
  _, old = consumer.embed(root, pushed_home.SENTENCES, version=1)
  version, new = consumer.embed(root, pushed_home.SENTENCES)
  assert version == 3
  np.testing.assert_array_equal(new, old)
  assert not np.allclose(
      new, consumer.embed(root, pushed_home.SENTENCES, version=2)[1])
  hub_new = hub.load(push_layout.version_dir(root, 'hub', 3)).signatures[
      'default'](sentences=tf.constant(pushed_home.SENTENCES))['default'].numpy()
  np.testing.assert_allclose(hub_new, old, rtol=1e-5, atol=1e-6)
  m = push_layout.read_manifest(root, 'serving', 3)
  assert m['rollback_of'] == 1 and m['spans'] == [1]
  code, _, _ = _cli(capsys, 'rollback', '--home', home, '--to', '2',
                    '--keep-versions', '2')
  assert code == 0
  assert push_layout.list_versions(root, 'serving') == [3, 4]


# -- damaged versions ---------------------------------------------------------


@pytest.fixture
def damaged_home(tmp_path, pushed):
  """A private copy of the push root (versions 1, 2) to damage."""
  home = str(tmp_path / 'home')
  root = pushed_home.copy_home(pushed['root'], home)
  data = [os.path.join(root, 'serving', '2', 'variables', name)
          for name in os.listdir(os.path.join(root, 'serving', '2',
                                              'variables'))
          if name.startswith('variables.data-')]
  assert len(data) == 1
  return home, root, data[0]


def _truncate(path):
  os.truncate(path, os.path.getsize(path) // 2)


def _flip(path):
  with open(path, 'r+b') as f:
    data = bytearray(f.read())
    for i in range(len(data) // 2, len(data) // 2 + 16):
      data[i] ^= 0xFF
    f.seek(0)
    f.write(data)


@pytest.mark.slow
@pytest.mark.parametrize('damage,what', [
    (_truncate, 'variables.data-00000-of-00001 is '),
    (_flip, 'variables.data-00000-of-00001 has other bytes'),
])
@pytest.mark.parametrize('argv', [['embed', 'the cat'], ['neighbors', 'cat']])
def test_consumers_name_the_damaged_version_file_and_rollback(
    damaged_home, capsys, damage, what, argv):
  home, root, data = damaged_home
  damage(data)
  code, out, err = _cli(capsys, argv[0], '--home', home, *argv[1:])
  assert code == 1 and out == ''  # 1: a damaged pushed version
  assert len(err.strip().splitlines()) == 1, err
  assert err.startswith('error: pushed version 2 ')
  assert 'damaged: serving/2/variables/' + what in err
  assert f'python -m pipelines rollback --push-root {root} --to 1' in err
  # The intact version still works, and the suggested rollback serves it.
  assert consumer.embed(root, ['the cat'], version=1)[0] == 1
  code, _, _ = _cli(capsys, 'rollback', '--push-root', root, '--to', '1')
  assert code == 0
  assert consumer.embed(root, ['the cat'])[0] == 3


def test_pushed_marks_a_truncated_version(damaged_home, capsys):
  home, root, data = damaged_home
  _truncate(data)
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert code == 1
  lines = out.splitlines()
  v2 = next(l for l in lines if l.strip().startswith('2 '))
  v1 = next(l for l in lines if l.strip().startswith('1 '))
  assert '(served)  DAMAGED' in v2 and 'DAMAGED' not in v1
  assert any(l.strip().startswith(
      'damaged: serving/2/variables/variables.data-00000-of-00001 is ')
             for l in lines)
  assert lines[-1] == (
      'served version 2 is damaged (TF Serving serves the highest version): '
      f'serve an intact version with `python -m pipelines rollback '
      f'--push-root {root} --to 1`')
  code, out, _ = _cli(capsys, 'pushed', '--home', home, '--json')
  assert code == 1
  listed = {v['version']: v['damaged'] for v in json.loads(out)}
  assert listed[1] == [] and len(listed[2]) == 1


def test_pushed_verify_finds_flipped_bytes(damaged_home, capsys):
  home, _, data = damaged_home
  _flip(data)
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert code == 0 and 'DAMAGED' not in out  # sizes still match
  code, out, _ = _cli(capsys, 'pushed', '--home', home, '--verify')
  assert code == 1 and '(served)  DAMAGED' in out
  assert 'variables.data-00000-of-00001 has other bytes' in out
  assert 'sizes not in its manifest' not in out


def test_pushed_says_which_versions_have_no_recorded_sizes(damaged_home,
                                                           capsys):
  home, root, _ = damaged_home
  path = os.path.join(root, 'serving', '1', push_layout.MANIFEST_FILENAME)
  with open(path) as f:
    manifest = json.load(f)
  del manifest['sizes']
  with open(path, 'w') as f:
    json.dump(manifest, f)
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert code == 0
  assert out.count('sizes not in its manifest (pushed before they were '
                   'recorded): only missing files checked; --verify reads '
                   'them') == 1
  assert out.index('sizes not in its manifest') > out.index('     1  ')


def test_pushed_shows_candidate_metrics_and_the_baseline(tmp_path, pushed,
                                                         capsys):
  home = str(tmp_path / 'home')
  root = home_lib.push_root(home)
  v = consumer.list_pushed(pushed['root'])[0]
  dirs = {'serving': v.serving_dir, 'hub': v.hub_dir}
  # What the pusher copies from the validator's report.json.
  publish.publish(root, dirs, {'metrics': {
      'candidate': {'recall_at_k': 0.25, 'eval_loss': 2.5}, 'baseline': None}})
  publish.publish(root, dirs, {'metrics': {
      'candidate': {'recall_at_k': 0.5}, 'baseline': {'recall_at_k': 0.25}}})
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert code == 0 and 'None' not in out
  assert ('eval_loss=2.5 recall_at_k=0.25  (validated without a baseline)'
          in out)
  assert 'recall_at_k=0.5  (baseline then: recall_at_k=0.25)' in out


def test_pushed_into_a_closed_pipe_ends_quietly(damaged_home):
  """`pushed | head -1`: the reader is gone before the listing is written."""
  import subprocess
  import sys
  home, _, _ = damaged_home
  read_end, write_end = os.pipe()
  os.close(read_end)
  repo = paths.REPO
  done = subprocess.run(
      [sys.executable, '-m', 'pipelines', 'pushed', '--home', home],
      stdout=write_end, stderr=subprocess.PIPE, cwd=repo, timeout=300,
      check=False)
  os.close(write_end)
  assert done.stderr.decode() == ''
  assert done.returncode == cli.BROKEN_PIPE_EXIT == 141
