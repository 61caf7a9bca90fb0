"""The consumer library and CLI on versions pushed from real exports.

Models come from `write_tpu_format_model` + `restore_for_serving`; they are
exported with the exporter's own functions and published with the pusher's.
Expected vectors are computed from the tables with numpy.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub

from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.artifacts.checkpoint_restore import restore_for_serving
from components.exporter import serving_export
from tpu_embeddings.push_root import publish
from pipelines.cli import main as cli
from tpu_embeddings.push_root import consumer
from tests.support import exporter_fixtures
from tests.support.artifact_fixtures import write_tpu_format_model
from tests.support import paths

TOKENS = ['the', 'cat', 'sat', 'on', 'mat', 'dog', 'ran']
DIM = 8


def _export(base: str, seed: int):
  rng = np.random.default_rng(seed)
  table = rng.normal(size=(len(TOKENS), DIM)).astype(np.float32)
  model_uri = os.path.join(base, f'model_{seed}')
  write_tpu_format_model(model_uri, TOKENS, table=table)
  restored = restore_for_serving(model_uri)
  dirs = {'serving': os.path.join(base, f'serving_{seed}'),
          'hub': os.path.join(base, f'hub_{seed}')}
  serving_export.export_serving_model(restored, dirs['serving'])
  exporter_fixtures.export_hub_module(
      exporter_fixtures.from_variable(restored.table('tokens')),
      restored.vocabulary, dirs['hub'])
  return model_uri, table, dirs


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  base = str(tmp_path_factory.mktemp('consumer'))
  home = os.path.join(base, 'home')
  root = consumer.push_root_for_home(home)
  tables = {}
  for seed in (1, 2):
    model_uri, table, dirs = _export(base, seed)
    result = publish.publish(root, dirs, {
        'source_model': model_uri, 'spans': [seed],
        'metrics': {'neighbor_recall': seed / 10}, 'pipeline_run_id': f'r{seed}'})
    tables[result.version] = table
  return {'home': home, 'root': root, 'tables': tables}


def _sentence(table, sentence):
  ids = {t: i for i, t in enumerate(TOKENS)}
  tokens = sentence.split()
  if not tokens:
    return np.zeros(DIM, np.float32)
  total = sum((table[ids[t]] for t in tokens if t in ids),
              np.zeros(DIM, np.float32))
  return total / np.sqrt(len(tokens))


def _cosine_neighbors(table, token, k):
  i = TOKENS.index(token)
  norms = np.linalg.norm(table, axis=1)
  scores = table @ table[i] / (norms * norms[i])
  scores[i] = -np.inf
  order = np.argsort(-scores, kind='stable')[:k]
  return [TOKENS[j] for j in order], scores[order]


SENTENCES = ['the cat sat', 'dog ran on the mat', 'zebra cat', '']


def test_list_pushed_returns_complete_versions_with_manifests(pushed):
  versions = consumer.list_pushed(pushed['root'])
  assert [v.version for v in versions] == [1, 2]
  assert versions[1].manifest['spans'] == [2]
  assert versions[1].manifest['metrics'] == {'neighbor_recall': 0.2}
  assert versions[1].hub_manifest['kind'] == 'hub'
  assert 'tfhub_module.pb' in versions[1].hub_manifest['files']
  assert versions[0].serving_dir == push_layout.version_dir(
      pushed['root'], 'serving', 1)


def test_embed_uses_latest_or_given_version(pushed):
  version, vectors = consumer.embed(pushed['root'], SENTENCES)
  assert version == 2
  for version in (1, 2):
    got_version, vectors = consumer.embed(pushed['root'], SENTENCES,
                                          version=version)
    assert got_version == version
    want = np.stack([_sentence(pushed['tables'][version], s)
                     for s in SENTENCES])
    np.testing.assert_allclose(vectors, want, rtol=1e-5, atol=1e-6)


def test_neighbors_match_cosine_ranking(pushed):
  version, rows = consumer.neighbors(pushed['root'], 'cat', k=3)
  want_tokens, want_scores = _cosine_neighbors(pushed['tables'][2], 'cat', 3)
  assert version == 2
  assert [t for t, _ in rows] == want_tokens
  np.testing.assert_allclose([s for _, s in rows], want_scores, rtol=1e-5)
  with pytest.raises(ValueError, match="'zebra' is not in the vocabulary"):
    consumer.neighbors(pushed['root'], 'zebra')
  with pytest.raises(ValueError, match='k must be an integer >= 1'):
    consumer.neighbors(pushed['root'], 'cat', k=0)


def test_pushed_hub_module_loads_with_hub_load_and_keras_layer(pushed):
  hub_dir = push_layout.version_dir(pushed['root'], 'hub', 2)
  want = np.stack([_sentence(pushed['tables'][2], s) for s in SENTENCES])
  module = hub.load(hub_dir)
  got = module.signatures['default'](
      sentences=tf.constant(SENTENCES))['default'].numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  layer = hub.KerasLayer(hub_dir, signature='default',
                         signature_outputs_as_dict=True)
  got = layer({'sentences': tf.constant(SENTENCES)})['default'].numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


CONSUMER_COMMANDS = ('pushed', 'embed', 'neighbors', 'rollback')


def test_commands_are_registered():
  assert set(CONSUMER_COMMANDS) <= set(cli.COMMAND_MODULES)


@pytest.fixture(autouse=True)
def consumer_commands_only(monkeypatch):
  """The real `cli.main`, without importing the pipeline's own commands."""
  monkeypatch.setattr(cli, 'COMMAND_MODULES', CONSUMER_COMMANDS)


def _cli(capsys, *argv):
  code = cli.main(list(argv))
  out, err = capsys.readouterr()
  return code, out, err


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
      _sentence(pushed['tables'][1], 'the cat sat'), atol=1e-5)

  code, out, _ = _cli(capsys, 'neighbors', '--home', pushed['home'], 'dog',
                      '-k', '2', '--json')
  assert code == 0
  got = json.loads(out)
  assert got['version'] == 2
  assert [n['token'] for n in got['neighbors']] == _cosine_neighbors(
      pushed['tables'][2], 'dog', 2)[0]


@pytest.mark.parametrize('argv,match', [
    (['embed', '--version', '9', 'cat'], 'version 9 is not a complete'),
    (['embed', '--version', '../1', 'cat'], 'escapes the push root'),
    (['neighbors', 'zebra'], "'zebra' is not in the vocabulary"),
    (['neighbors', '-k', '0', 'cat'], 'k must be an integer >= 1'),
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
  root = consumer.push_root_for_home(home)
  for v in consumer.list_pushed(pushed['root']):
    publish.publish(root, {'serving': v.serving_dir, 'hub': v.hub_dir},
                    {'spans': v.manifest['spans']})
  code, out, _ = _cli(capsys, 'rollback', '--home', home, '--to', '1')
  assert code == 0 and 're-published as version 3' in out
  assert push_layout.list_versions(root, 'hub') == [1, 2, 3]
  _, old = consumer.embed(root, SENTENCES, version=1)
  version, new = consumer.embed(root, SENTENCES)
  assert version == 3
  np.testing.assert_array_equal(new, old)
  assert not np.allclose(new, consumer.embed(root, SENTENCES, version=2)[1])
  hub_new = hub.load(push_layout.version_dir(root, 'hub', 3)).signatures[
      'default'](sentences=tf.constant(SENTENCES))['default'].numpy()
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
  root = consumer.push_root_for_home(home)
  for v in consumer.list_pushed(pushed['root']):
    publish.publish(root, {'serving': v.serving_dir, 'hub': v.hub_dir},
                    {'spans': v.manifest['spans'],
                     'metrics': v.manifest['metrics']})
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
  assert code == 2 and out == ''
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
  assert code == 0
  lines = out.splitlines()
  v2 = next(l for l in lines if l.strip().startswith('2 '))
  v1 = next(l for l in lines if l.strip().startswith('1 '))
  assert '(served)  DAMAGED' in v2 and 'DAMAGED' not in v1
  assert any(l.strip().startswith(
      'damaged: serving/2/variables/variables.data-00000-of-00001 is ')
             for l in lines)
  assert lines[-1] == (f'served version 2 is damaged: serve an intact version '
                       f'with `python -m pipelines rollback --push-root {root} '
                       '--to 1`')
  code, out, _ = _cli(capsys, 'pushed', '--home', home, '--json')
  listed = {v['version']: v['damaged'] for v in json.loads(out)}
  assert listed[1] == [] and len(listed[2]) == 1


def test_pushed_verify_finds_flipped_bytes(damaged_home, capsys):
  home, _, data = damaged_home
  _flip(data)
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert code == 0 and 'DAMAGED' not in out  # sizes still match
  code, out, _ = _cli(capsys, 'pushed', '--home', home, '--verify')
  assert code == 0 and '(served)  DAMAGED' in out
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
  root = consumer.push_root_for_home(home)
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
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
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
