"""What a compiled package of a module model carries: only the settings its
model uses (read back with kfp's own loader), none a run could set in vain;
and `compile --home` reuses the model and settings the home records."""

import json
import os

import kfp.components
import pytest

from pipelines.cli import main as cli
from pipelines.kubeflow import package as kubeflow_package
from pipelines.local import home_record
from tests.support import paths
from tests.support.compiled_package import IMAGE

MODULE = os.path.join(paths.REPO, 'examples', 'two_tower',
                      'two_tower_model.py')
# Made for skip-gram's pairs, evaluation and table export; two-tower reads
# none of them.
SKIP_GRAM_ONLY = {
    'trainer_config': ('window', 'negatives', 'shared_negatives',
                       'negative_group', 'subsample', 'corpus_scaling',
                       'sequences_per_chunk',
                       'embedding_spec'),
    'validator_config': ('k', 'max_recall_queries', 'similarity_file',
                         'related_pairs_file', 'analogy_file',
                         'beat_frequency_model', 'beat_popularity',
                         'min_baseline_coverage', 'min_recall_at_k',
                         'min_analogy_accuracy', 'min_spearman'),
    'exporter_config': ('num_oov_buckets', 'l2_regularization'),
}


def _compile(tmp_path, *extra):
  out = tmp_path / 'pipeline.yaml'
  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', 'gs://my-bucket/tfx', *extra])
  return rc, str(out)


@pytest.fixture(scope='module')
def two_tower_package(tmp_path_factory):
  """The two-tower module compiled, its wheel under a local root."""
  tmp = tmp_path_factory.mktemp('two_tower')
  out = str(tmp / 'pipeline.yaml')
  rc = cli.main(['compile', '--output', out, '--image', IMAGE,
                 '--pipeline-root', str(tmp / 'root'), '--module-file',
                 MODULE])
  assert rc == 0
  return out


def _configs(path):
  """{config parameter: its compiled default, parsed}, as kfp loads it."""
  component = kfp.components.load_component_from_file(path)
  return {name: json.loads(spec.default)
          for name, spec in component.component_spec.inputs.items()
          if name.endswith('_config')}


def test_a_module_model_s_package_carries_no_skip_gram_setting(
    two_tower_package):
  configs = _configs(two_tower_package)
  for name, fields in SKIP_GRAM_ONLY.items():
    carried = sorted(set(fields) & set(configs[name]))
    assert not carried, (name, carried)
  with open(two_tower_package) as f:
    text = f.read()
  for word in ('subsample', 'analogy_file', 'negatives', 'related_pairs'):
    assert word not in text, word
  # What the model uses stays, its module's SETTINGS included.
  assert (configs['trainer_config']['epochs'],
          configs['trainer_config']['batch_size'],
          configs['validator_config']['max_eval_examples'],
          configs['validator_config']['regression_margin']) == (
              3, 512, 5000, 0.05)
  assert configs['exporter_config'] == {}
  # The vocabularies the module's FEATURES name, which VocabularyGen counts.
  assert configs['vocabulary_config']['vocabularies'] == {
      'item_category': ['item_category'], 'item_id': ['history', 'item_id'],
      'user_id': ['user_id']}


def test_a_run_may_not_set_what_the_compiled_model_does_not_use(
    two_tower_package):
  with pytest.raises(ValueError, match=r'^--param trainer_config.window: '
                     'the compiled model does not use it'):
    kubeflow_package.checked(two_tower_package, None,
                             {'trainer_config.window': '3'})
  _, _, arguments = kubeflow_package.checked(
      two_tower_package, None, {'trainer_config.epochs': '7'})
  assert json.loads(arguments['trainer_config'])['epochs'] == 7
  assert 'window' not in json.loads(arguments['trainer_config'])


def test_the_skip_gram_package_carries_its_settings(tmp_path):
  rc, out = _compile(tmp_path)
  assert rc == 0
  configs = _configs(out)
  for name, fields in SKIP_GRAM_ONLY.items():
    assert set(fields) <= set(configs[name]), name


def test_compile_reuses_the_model_and_settings_a_home_records(
    tmp_path, capfd):
  home = tmp_path / 'home'
  home.mkdir()
  home_record.write(str(home), home_record.of_run(
      MODULE, {'example_gen.format': 'csv', 'trainer.epochs': 2}))
  out = tmp_path / 'pipeline.yaml'
  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', str(tmp_path / 'root'), '--home',
                 str(home), '--set', 'trainer.batch_size=256'])
  printed = capfd.readouterr()
  assert rc == 0, printed.err
  assert printed.out.splitlines()[0] == (
      f'compile: reusing what the home records: module file {MODULE}, '
      'example_gen.format="csv", trainer.epochs=2')
  package = kubeflow_package.read_package(str(out))
  trainer = json.loads(package.parameters['trainer_config'])
  assert (trainer['epochs'], trainer['batch_size']) == (2, 256)
  assert 'window' not in trainer
  with open(out) as f:
    text = f.read()
  assert 'two_tower_model@' in text  # the recorded module, packaged


@pytest.mark.parametrize('extra, message', [
    ((), 'no such directory'),
    (('--selftest',), 'compile --selftest reads no home')])
def test_compile_refuses_a_home_it_cannot_reuse(tmp_path, capsys, extra,
                                                message):
  home = tmp_path / ('home' if extra else 'nope')
  if extra:
    home.mkdir()
  rc, out = _compile(tmp_path, '--home', str(home), *extra)
  err = capsys.readouterr().err.strip().splitlines()
  assert rc == 2 and len(err) == 1, err
  assert f'--home {home}: {message}' in err[0], err
  assert not os.path.exists(out)


def test_compile_refuses_a_setting_the_module_does_not_use(tmp_path, capsys):
  rc, out = _compile(tmp_path, '--module-file', MODULE, '--set',
                     'exporter.l2_regularization=0.01')
  err = capsys.readouterr().err.strip().splitlines()
  assert rc == 2 and len(err) == 1, err
  assert 'exporter.l2_regularization applies only to' in err[0], err
  assert not os.path.exists(out)
