"""What the pinned pipeline pushes, used where consumers use it: a fresh
environment with the newest TensorFlow, tf-keras and tensorflow-hub in the
registry and this package installed by `pip install <checkout>`.

Every answer there is compared with the same client's answer on the pinned
stack (TensorFlow 2.15, tensorflow-hub 0.15), from the same pushed version.
"""

import json
import os
import subprocess

import numpy as np
import pytest

from pipelines import demo_data
from tests.support import cli_runs
from tests.support import consumer_venv
from tests.support import hub_clients
from tests.support import paths
from tests.support import serving_clients
from tests.support.tiny_pipeline import FAST
from tests.support.tiny_pipeline import TINY

_SUPPORT = os.path.join(paths.REPO, 'tests', 'support')
_WAYS = ','.join(serving_clients.WAYS)

# The consumer API, as a service or notebook uses the installed package.
_CONSUMER_SCRIPT = '''
import json, sys, tpu_embeddings
root, token = sys.argv[1:]
version, vectors = tpu_embeddings.embed(root, ['the cat sat', token, ''])
_, rows = tpu_embeddings.neighbors(root, token, k=3)
listed = [v.version for v in tpu_embeddings.list_pushed(root)]
print(json.dumps({'latest': tpu_embeddings.latest_version(root),
                  'version': version, 'vectors': vectors.tolist(),
                  'neighbors': rows, 'listed': listed,
                  'module': tpu_embeddings.__file__}))
'''


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  """A home the pinned pipeline ran in, with version 1 pushed."""
  base = tmp_path_factory.mktemp('pushed')
  data, home = str(base / 'data'), str(base / 'home')
  demo_data.generate(data, spans=1, seed=3, shape=TINY)
  code, out = cli_runs.run('run', '--data', data, '--home', home, *FAST)
  assert code == 0, out[-3000:]
  root = os.path.join(home, 'pushed')
  return {'root': root, 'serving': os.path.join(root, 'serving', '1'),
          'hub': os.path.join(root, 'hub', '1'),
          'token': hub_clients.inputs(os.path.join(root, 'serving', '1'))[1][0]}


@pytest.fixture(scope='module')
def consumer(tmp_path_factory):
  """The python of a fresh consumer environment with this package."""
  try:
    versions = consumer_venv.newest_versions()
  except consumer_venv.RegistryUnreachable as e:
    pytest.skip(f'the package registry cannot be reached, so the newest '
                f'TensorFlow is unknown: {e}')
  base = tmp_path_factory.mktemp('consumer')
  python = consumer_venv.create(str(base / 'venv'), versions)
  consumer_venv.install_checkout(python, paths.REPO, str(base))
  return {'python': python, 'versions': versions, 'cwd': str(base)}


def _run(command, cwd):
  done = subprocess.run(command, cwd=cwd, env=consumer_venv.clean_env(),
                        capture_output=True, text=True, timeout=900)
  assert done.returncode == 0, f'{command}:\n{done.stderr[-3000:]}'
  return done.stdout


def _answers(python, script, args, out, cwd):
  _run([python, os.path.join(_SUPPORT, script)] + list(args) + [out], cwd)
  return dict(np.load(out, allow_pickle=True))


@pytest.fixture(scope='module')
def pinned(pushed, tmp_path_factory):
  """Each client's answers on the pinned stack, in this process."""
  base = tmp_path_factory.mktemp('pinned')
  serving_clients.main([_WAYS, pushed['serving'], str(base)])
  answers = serving_clients.answers(str(base))
  hub_clients.main([pushed['serving'], pushed['hub'], str(base / 'hub.npz')])
  answers['hub'] = dict(np.load(str(base / 'hub.npz'), allow_pickle=True))
  return answers


def _assert_same(got, want):
  assert sorted(got) == sorted(want)
  for key, value in want.items():
    if value.dtype.kind in 'OSU':
      np.testing.assert_array_equal(got[key], value, err_msg=key)
    else:
      np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6,
                                 err_msg=key)


def test_the_environment_has_the_newest_releases(consumer):
  assert consumer_venv.versions_of(consumer['python']) == consumer['versions']


def test_consumer_api_of_the_installed_package(consumer, pushed):
  import tpu_embeddings
  # Run outside the repository: the package comes from site-packages.
  got = json.loads(_run([consumer['python'], '-c', _CONSUMER_SCRIPT,
                         pushed['root'], pushed['token']], consumer['cwd']))
  assert 'site-packages' in got['module']
  assert got['latest'] == got['version'] == 1 and got['listed'] == [1]
  _, want = tpu_embeddings.embed(pushed['root'],
                                 ['the cat sat', pushed['token'], ''])
  np.testing.assert_allclose(got['vectors'], want, rtol=1e-5, atol=1e-6)
  _, rows = tpu_embeddings.neighbors(pushed['root'], pushed['token'], k=3)
  assert [t for t, _ in got['neighbors']] == [t for t, _ in rows]


@pytest.fixture(scope='module')
def newest_serving(consumer, pushed, tmp_path_factory):
  """Each serving client's answers on the newest stack, in one process."""
  out = tmp_path_factory.mktemp('newest')
  _run([consumer['python'], os.path.join(_SUPPORT, 'serving_clients.py'),
        _WAYS, pushed['serving'], str(out)], consumer['cwd'])
  return serving_clients.answers(str(out))


@pytest.mark.parametrize('way', serving_clients.WAYS)
def test_serving_signatures_answer_as_on_the_pinned_stack(newest_serving,
                                                          pinned, way):
  _assert_same(newest_serving[way], pinned[way])


@pytest.mark.parametrize('signature', sorted(serving_clients.INPUTS))
def test_saved_model_cli_runs_every_signature(consumer, pushed, pinned,
                                              signature, tmp_path):
  cli = os.path.join(os.path.dirname(consumer['python']), 'saved_model_cli')
  out = _run([cli, 'run', '--dir', pushed['serving'], '--tag_set', 'serve',
              '--signature_def', signature, '--input_exprs',
              serving_clients.saved_model_cli_exprs(signature), '--outdir',
              str(tmp_path)], consumer['cwd'])
  assert 'Result for output key' in out
  got = {f'{signature}/{name[:-4]}': np.load(str(tmp_path / name),
                                             allow_pickle=True)
         for name in os.listdir(tmp_path) if name.endswith('.npy')}
  _assert_same(got, {k: v for k, v in pinned['session'].items()
                     if k.startswith(f'{signature}/')})


def test_hub_load_keras_layer_and_fine_tuning(consumer, pushed, pinned,
                                             tmp_path):
  want = pinned['hub']
  got = _answers(consumer['python'], 'hub_clients.py',
                 (pushed['serving'], pushed['hub']),
                 str(tmp_path / 'newest.npz'), consumer['cwd'])
  _assert_same({k: v for k, v in got.items() if '_fit/' not in k},
               {k: v for k, v in want.items() if '_fit/' not in k})
  # KerasLayer(trainable=True) fits: one trainable table, the loss falls,
  # and exactly the rows of the batch's known tokens move.
  for answers in (got, want):
    assert int(answers['serving_fit/trainable_weights']) == 1
    assert float(answers['serving_fit/last_loss']) < float(
        answers['serving_fit/first_loss'])
  np.testing.assert_array_equal(got['serving_fit/moved_rows'],
                                want['serving_fit/moved_rows'])
  assert len(want['serving_fit/moved_rows']) == 3
