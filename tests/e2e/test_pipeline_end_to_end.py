"""The main job end to end on a tiny 2-span corpus: run, retrain, lineage."""

import json
import os
import subprocess
import sys
import types

import pytest

from pipelines import demo_data
from pipelines.cli.main import main
from pipelines.local import retrain
from tests.support import cli_runs
from tests.support import paths
from tests.support import summary_lines
from tests.support.tiny_pipeline import FAST
from tests.support.tiny_pipeline import TINY
from tpu_embeddings.models import skipgram_eval
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout

_cli = cli_runs.run


@pytest.fixture(scope='module')
def home(tmp_path_factory):
  """A home where `run` pushed version 1 (span 2) and `retrain`, once span 3
  landed, version 2; with what each printed. Every test starts from this,
  whatever ran before it."""
  root = tmp_path_factory.mktemp('e2e')
  data, home_dir = str(root / 'data'), str(root / 'home')
  demo_data.generate(data, spans=2, seed=5, shape=TINY)
  ran = _cli('run', '--data', data, '--home', home_dir, *FAST)
  versions_after_run = push_layout.list_versions(_pushed(root), 'serving')
  demo_data.generate(data, spans=1, first_span=3, seed=5, shape=TINY)
  retrained = _cli('retrain', '--data', data, '--home', home_dir, *FAST[:-2])
  return types.SimpleNamespace(root=root, data=data, home=home_dir, ran=ran,
                               retrained=retrained,
                               versions_after_run=versions_after_run)


def _pushed(root):
  return str(root / 'home' / 'pushed')


def test_run_blesses_and_pushes_version_1(home):
  rc, out = home.ran
  assert rc == 0, out
  assert 'validation: BLESSED' in out, out
  assert 'pushed: version 1' in out
  for node in ('FileBasedExampleGen', 'Vocabulary', 'EmbeddingTrainer',
               'CheckpointValidator', 'EmbeddingExporter', 'EmbeddingPusher'):
    assert f'  {node}' in out
  assert 'nearest neighbours' in out
  assert home.versions_after_run == [1]
  assert push_layout.latest_version(_pushed(home.root), 'hub') >= 1
  assert os.path.exists(os.path.join(
      push_layout.version_dir(_pushed(home.root), 'hub', 1),
      'tfhub_module.pb'))
  manifest = push_layout.read_manifest(_pushed(home.root), 'serving', 1)
  assert manifest['spans'] == [2] and manifest['eval_span'] == 2
  assert 'cold start: tables tokens, contexts initialized' in (
      out.splitlines()), out


def test_retrain_on_a_new_span_warm_starts_version_2(home):
  rc, out = home.retrained
  assert rc == 0, out
  assert 'span 3 is newer than pushed version 1' in out
  assert 'warm start from' in out
  pushed = _pushed(home.root)
  assert push_layout.list_versions(pushed, 'serving') == [1, 2]
  assert push_layout.list_versions(pushed, 'hub') == [1, 2]
  manifest = push_layout.read_manifest(pushed, 'serving', 2)
  assert manifest['spans'] == [3] and manifest['eval_span'] == 3
  summary_lines.blessed_verdict(out, skipgram_eval.METRICS)
  start = next(l for l in out.splitlines() if l.startswith('warm start: '))
  assert start.startswith('warm start: tables tokens, contexts from ') and (
      'dense' not in start), start
  first = push_layout.read_manifest(pushed, 'serving', 1)
  with open(os.path.join(home_paths.resolve(manifest['source_model'], pushed),
                         'metadata.json')) as f:
    meta = json.load(f)
  assert meta['warm_start']['base_model'] == home_paths.resolve(
      first['source_model'], pushed), meta
  assert meta['warm_start']['kept_tokens'] > 0


def test_retrain_again_does_nothing(home):
  rc, out = _cli('retrain', '--data', home.data, '--home', home.home)
  assert rc == 0
  assert 'not newer than the pushed version 2' in out
  assert push_layout.list_versions(_pushed(home.root), 'serving') == [1, 2]


def test_lineage_names_the_spans(home):
  rc, out = _cli('lineage', '--home', home.home, '--json')
  assert rc == 0
  latest = json.loads(out)
  assert latest['version'] == 2 and latest['spans'] == [3]
  assert latest['warm_start_uri']
  rc, out = _cli('lineage', '--home', home.home, '--version', '1')
  assert rc == 0
  assert out.startswith('pushed version 1 <- trained on span(s) 2')
  assert 'EmbeddingTrainer' in out and 'Examples span=2' in out
  assert _cli('lineage', '--home', home.home, '--version', '9')[0] == 2


def test_lineage_reads_the_home_without_tensorflow_or_tfx(home):
  """Its trainer steps read each Model's metadata.json: a local file."""
  probe = ('import sys; from pipelines.cli import main as cli; '
           'rc = cli.main(["lineage", "--home", sys.argv[1]]); '
           'print(rc, sorted(m for m in ("tensorflow", "tfx") '
           'if m in sys.modules))')
  done = subprocess.run([sys.executable, '-c', probe, home.home],
                        cwd=paths.REPO, capture_output=True, text=True,
                        timeout=120)
  assert done.stdout.strip().splitlines()[-1] == '0 []', (
      done.stdout[-2000:], done.stderr[-2000:])


def _cli_err(capsys, *argv):
  """(exit code, stdout, stderr) of the CLI run in this process."""
  code = main(list(argv))
  out, err = capsys.readouterr()
  return code, out, err


def test_embed_and_neighbors_answer_as_the_served_saved_model(home, capsys):
  import numpy as np
  import tensorflow as tf

  from tpu_embeddings.push_root import consumer
  serving_dir = push_layout.version_dir(_pushed(home.root), 'serving', 2)
  with open(f'{serving_dir}/assets/vocabulary.txt', encoding='utf-8') as f:
    token = f.read().split()[0]
  code, out, _ = _cli_err(capsys, 'neighbors', '--home', home.home, '-k', '3',
                          '--json', token)
  assert code == 0
  assert len(json.loads(out)['neighbors']) == 3
  code, out, _ = _cli_err(capsys, 'embed', '--home', home.home,
                          f'{token} {token}', '--json')
  assert code == 0
  want = tf.saved_model.load(serving_dir).signatures['serving_default'](
      sentences=tf.constant([f'{token} {token}']))['embeddings'].numpy()
  [row] = json.loads(out)['embeddings']
  assert row['text'] == f'{token} {token}' and row['unknown_tokens'] == []
  np.testing.assert_allclose([row['vector']], want, atol=1e-6)
  code, out, err = _cli_err(capsys, 'neighbors', '--home', home.home,
                            'no-such-token')
  assert code == 2 and out == '', (code, out, err)
  assert err.startswith('error: ') and len(err.strip().splitlines()) == 1
  assert 'is not in the vocabulary' in err, err
  assert consumer.unknown_tokens(_pushed(home.root), [f'{token} zzz', token]
                                 ) == (2, [['zzz'], []])  # the served one


def test_pushed_shows_the_skipgram_metrics(home):
  code, out = _cli('pushed', '--home', home.home)
  assert code == 0
  line = out.splitlines()[1]
  assert ' recall_at_k=' in line and 'spans 3 ' in line, out
  assert ' - ' not in line and '=None' not in line, out


def test_second_trigger_exits_while_the_first_holds_the_lock(home):
  with retrain.RetrainLock(home.home):
    proc = subprocess.run(
        [sys.executable, '-m', 'pipelines', 'retrain', '--data', home.data,
         '--home', home.home], capture_output=True, text=True, timeout=120,
        cwd=paths.REPO)
  assert proc.returncode == 0, proc.stderr
  assert 'another retrain is running' in proc.stdout
  assert push_layout.list_versions(_pushed(home.root), 'serving') == [1, 2]


def test_a_diverged_model_is_refused_by_its_health_gate(tmp_path, capsys):
  """SGD at the highest learning rate fills the tables with NaN/Inf: the run
  ends with the validator's verdict, which says so, as the training line
  does (not "max row norm none", "final loss None"); the exporter does not
  export a model it refused, and the command exits 6 with one line saying
  which gate refused it."""
  demo_data.generate(str(tmp_path / 'data'), spans=1, seed=5, shape=TINY)
  rc = main(['run', '--data', str(tmp_path / 'data'), '--home',
             str(tmp_path / 'home'), '--set', 'optimizer=sgd',
             '--set', 'learning_rate=10000'] + FAST)
  out, err = capsys.readouterr()
  assert rc == 6, out
  assert err.startswith('error: the model was not blessed, nothing was '
                        'pushed: health/tokens/finite: '), err
  assert len(err.splitlines()) == 1, err
  assert 'validation: NOT BLESSED (health/tokens/finite: ' in out, out
  assert 'NaN/Inf values' in out
  assert ("row norms not measured: table 'tokens' holds NaN/Inf" in out and
          "collapse not measured: table 'tokens' holds NaN/Inf" in out), out
  assert ("final loss NaN/Inf (tables 'contexts', 'tokens' hold NaN/Inf)"
          in out), out
  assert 'norm none' not in out and 'loss None' not in out, out
  assert 'pushed: nothing (model not blessed)' in out
  assert '  EmbeddingExporter      done' in out
  assert not os.path.exists(str(tmp_path / 'home' / 'pushed' / 'serving'))


def test_a_contexts_table_model_is_validated_exported_and_served(tmp_path,
                                                                 capsys):
  """table.context_table=true trains two tables; the pushed model serves the
  tokens table only, and a retrain warm starts both tables."""
  import numpy as np
  import tensorflow as tf

  from tpu_embeddings.artifacts import model_layout
  from tpu_embeddings.validation import baseline
  demo_data.generate(str(tmp_path / 'data'), spans=1, seed=5, shape=TINY)
  args = ['--data', str(tmp_path / 'data'), '--home', str(tmp_path / 'home'),
          '--set', 'context_table=true'] + FAST
  assert main(['run'] + args) == 0
  out = capsys.readouterr().out
  assert 'validation: BLESSED' in out and 'pushed: version 1' in out, out
  pushed = _pushed(tmp_path)
  source = home_paths.resolve(push_layout.read_manifest(
      pushed, 'serving', 1)['source_model'], pushed)
  reader = tf.train.load_checkpoint(model_layout.latest_checkpoint(source))
  tokens = reader.get_tensor(model_layout.table_key('tokens'))
  assert reader.get_tensor(model_layout.table_key('contexts')).shape == (
      tokens.shape)
  version = baseline.read(pushed, 1)
  served = baseline.lookup_rows(version, baseline.read_tokens(version.path))
  np.testing.assert_array_equal(served, tokens)
  demo_data.generate(str(tmp_path / 'data'), spans=1, first_span=2, seed=5,
                     shape=TINY)
  assert main(['retrain'] + args[:-2]) == 0
  out = capsys.readouterr().out
  assert 'pushed: version 2' in out, out
  second = home_paths.resolve(push_layout.read_manifest(
      pushed, 'serving', 2)['source_model'], pushed)
  assert model_layout.read_metadata(second)['warm_start']['kept_tokens'] > 0
