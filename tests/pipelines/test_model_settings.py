"""Settings that apply: one a model does not use is refused in one line
before anything runs, wherever it was given (--set, --config, the home's
record, the module's own SETTINGS); those it uses still work."""

import json
import os

import pytest

from pipelines import model_settings
from pipelines.cli import main as cli
from pipelines.config import PipelineConfig
from pipelines.local import home_record
from tests.support import paths
from tpu_embeddings.models import module_files

MODULE = os.path.join(paths.REPO, 'examples', 'two_tower',
                      'two_tower_model.py')


def _run(tmp_path, *extra):
  """`run` of the two-tower module with `extra` arguments: (rc, stderr
  lines); the data root need not exist, settings are checked first."""
  return cli.main(['run', '--data', str(tmp_path / 'data'), '--home',
                   str(tmp_path / 'home'), '--module-file', MODULE,
                   *extra])


def _one_line(capsys):
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1, err
  return err[0]


def test_a_skip_gram_export_setting_is_refused_for_a_module_model(
    tmp_path, capsys):
  rc = _run(tmp_path, '--set', 'exporter.l2_regularization=0.01')
  line = _one_line(capsys)
  assert rc == 2
  assert 'exporter.l2_regularization applies only to a model that exports ' \
      'a table' in line, line
  assert 'two_tower_model.py does not use it: remove it from --set' in line
  assert not (tmp_path / 'home').exists()


@pytest.mark.parametrize('settings, refused', [
    ({'trainer': {'window': 3}}, 'trainer.window'),
    ({'negatives': 10}, 'trainer.negatives'),
    ({'trainer.subsample': 0.0}, 'trainer.subsample'),
    ({'validator': {'analogy_file': 'q.txt'}}, 'validator.analogy_file'),
    ({'related_pairs_file': 'r.tsv'}, 'validator.related_pairs_file'),
    ({'validator.k': 5}, 'validator.k'),
    ({'table.dim': 64}, 'table.dim'),
    # Two-tower declares recall_at_10, not skip-gram's recall_at_k.
    ({'validator.min_recall_at_k': 0.1}, 'validator.min_recall_at_k'),
])
def test_a_config_file_setting_the_module_does_not_use_is_refused(
    tmp_path, capsys, settings, refused):
  config = tmp_path / 'settings.json'
  config.write_text(json.dumps(settings))
  rc = _run(tmp_path, '--config', str(config))
  line = _one_line(capsys)
  assert rc == 2 and line.startswith(f'error: {refused} '), line
  assert 'remove it from --set and --config' in line, line


def test_settings_a_module_model_uses_still_apply():
  config = model_settings.with_module_defaults(
      {'trainer.epochs': 2, 'batch_size': 64, 'shuffle_buffer': 100,
       'seed': 3, 'validator.regression_margin': 0.1,
       'validator.max_eval_examples': 10, 'example_gen.format': 'csv',
       'vocabulary.min_count': 2, 'pusher.keep_versions': 2}, MODULE)
  assert (config.trainer.epochs, config.trainer.batch_size,
          config.trainer.shuffle_buffer, config.validator.seed,
          config.validator.regression_margin,
          config.validator.max_eval_examples, config.example_gen.format,
          config.vocabulary.min_count, config.pusher.keep_versions) == (
              2, 64, 100, 3, 0.1, 10, 'csv', 2, 2)
  # The module's own SETTINGS are below them.
  assert config.trainer.learning_rate_decay is False


def test_the_built_in_model_uses_every_setting():
  assert model_settings.unused_settings(module_files.builtin()) == {}
  config = model_settings.with_module_defaults(
      {'window': 3, 'exporter.l2_regularization': 0.01, 'table.dim': 8,
       'validator.min_analogy_accuracy': 0.1}, '')
  assert (config.trainer.window, config.exporter.l2_regularization) == (
      3, 0.01)


def _module(tmp_path, extra: str) -> str:
  path = tmp_path / 'my_model.py'
  with open(MODULE) as f:
    path.write_text(f.read() + '\n' + extra + '\n')
  return str(path)


def test_the_module_s_own_settings_are_checked_too(tmp_path):
  module = _module(tmp_path, "SETTINGS = {'trainer.negatives': 10}")
  with pytest.raises(ValueError, match=r'^trainer.negatives applies only to '
                     r'a model that reads it.*my_model.py does not use it: '
                     r'remove it from its SETTINGS$'):
    model_settings.with_module_defaults({}, module)


def test_a_module_that_reads_a_skip_gram_setting_declares_it(tmp_path):
  module = _module(tmp_path, "SETTINGS_READ = ('trainer.window',)")
  config = model_settings.with_module_defaults({'trainer.window': 3}, module)
  assert config.trainer.window == 3
  with pytest.raises(ValueError, match='trainer.negatives'):
    model_settings.with_module_defaults({'negatives': 3}, module)


def test_a_bad_settings_read_declaration_is_named(tmp_path):
  module = _module(tmp_path, "SETTINGS_READ = ('trainer.epochs',)")
  with pytest.raises(ValueError, match=r'my_model.py: SETTINGS_READ must '
                     r"list settings among trainer.window, .*got \('trainer"):
    model_settings.with_module_defaults({}, module)


def test_a_setting_the_home_records_is_refused_naming_the_record(
    tmp_path, capsys):
  home = tmp_path / 'home'
  home.mkdir()
  home_record.write(str(home), home_record.of_run(
      MODULE, {'example_gen.format': 'csv', 'trainer.window': 3}))
  rc = cli.main(['retrain', '--data', str(tmp_path / 'data'), '--home',
                 str(home)])
  line = _one_line(capsys)
  assert rc == 2 and line.startswith('error: trainer.window '), line
  assert line.endswith(f'remove it from --set and --config, or from '
                       f'{home / "home.json"}'), line


def test_a_config_built_in_code_is_refused_what_the_module_does_not_use():
  config = PipelineConfig().replace(**{'exporter.num_oov_buckets': 7})
  with pytest.raises(ValueError, match=r'^exporter.num_oov_buckets .*remove '
                     'it from the pipeline config$'):
    model_settings.for_module(config, MODULE)
