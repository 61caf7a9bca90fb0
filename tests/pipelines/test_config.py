import dataclasses
import json
import os

import pytest

from components.trainer.config import TableConfig
from components.trainer.config import TrainerConfig
from pipelines.config import PipelineConfig
from tests.support import paths


def test_spec_follows_the_config():
  spec = PipelineConfig(table=TableConfig(
      dim=8, optimizer='adam', learning_rate=0.01)).embedding_spec()
  assert spec.tables[0].dim == 8 and spec.optimizer.kind == 'adam'
  assert 'initial_accumulator_value' not in spec.optimizer.hyperparameters
  adagrad = PipelineConfig(
      table=TableConfig(initial_accumulator_value=0.5)).embedding_spec()
  assert adagrad.optimizer.hyperparameters['initial_accumulator_value'] == 0.5


def test_unknown_field_is_named():
  with pytest.raises(ValueError, match="unknown field 'steps'"):
    PipelineConfig.from_json(json.dumps({'steps': 3}))


def test_each_component_gets_its_section_of_the_config():
  from pipelines import pipeline  # pylint: disable=g-import-not-at-top
  from tpu_embeddings.core import settings  # pylint: disable=g-import-not-at-top
  config = PipelineConfig().replace(**{'trainer.window': 7, 'k': 4,
                                       'keep_versions': 2, 'seed': 3,
                                       'min_count': 2, 'num_oov_buckets': 3})
  components = pipeline.create_components('/data', '/pushed', config)
  sent = {c.id: json.loads(c.exec_properties[settings.CONFIG_KEY])
          for c in components if settings.CONFIG_KEY in c.exec_properties}
  assert sent['EmbeddingTrainer'] == dataclasses.asdict(config.trainer_config())
  assert sent['EmbeddingTrainer']['window'] == 7
  assert sent['EmbeddingTrainer']['seed'] == sent['CheckpointValidator'][
      'seed'] == 3
  assert sent['CheckpointValidator'] == dataclasses.asdict(config.validator)
  assert sent['EmbeddingPusher'] == {'keep_versions': 2}
  assert sent['Vocabulary'] == dataclasses.asdict(config.vocabulary)
  assert sent['EmbeddingExporter'] == dataclasses.asdict(config.exporter)
  assert sent['EmbeddingExporter']['num_oov_buckets'] == 3
  assert sent['Vocabulary']['min_count'] == 2
  # The defaults a user gets are the component configs' own.
  assert PipelineConfig().trainer == TrainerConfig()


def test_settings_are_named_by_section_or_field():
  config = PipelineConfig.from_dict({'trainer': {'window': 9},
                                     'validator.k': 3, 'dim': 16})
  assert (config.trainer.window, config.validator.k, config.table.dim) == (
      9, 3, 16)
  with pytest.raises(ValueError, match="unknown field 'trainer.dim'"):
    PipelineConfig.from_dict({'trainer.dim': 3})
  with pytest.raises(ValueError, match='EmbeddingTrainer parameter window '
                     'must be an integer, got'):
    PipelineConfig.from_dict({'window': 'five'})
  with pytest.raises(ValueError, match='table.* or trainer.embedding_spec'):
    PipelineConfig.from_dict({'dim': 8, 'embedding_spec':
                              TableConfig().embedding_spec().to_json()})


def test_cli_config_file_and_overrides(tmp_path):
  from pipelines.cli import arguments  # pylint: disable=g-import-not-at-top
  from pipelines.cli import main as cli  # pylint: disable=g-import-not-at-top
  path = tmp_path / 'config.json'
  path.write_text(json.dumps({'trainer': {'window': 4, 'epochs': 2}}))
  parser = cli.build_parser()
  args = parser.parse_args(['run', '--data', 'd', '--home', 'h', '--config',
                            str(path), '--set', 'trainer.window=6'])
  config = arguments.config_from_args(args)
  assert (config.trainer.window, config.trainer.epochs) == (6, 2)
  path.write_text('{"trainer": ')
  with pytest.raises(ValueError, match=f'--config {path}: not valid JSON'):
    arguments.config_from_args(args)


def test_the_item_sequences_config_changes_only_what_the_readme_names():
  from pipelines.cli import arguments  # pylint: disable=g-import-not-at-top
  from pipelines.cli import main as cli  # pylint: disable=g-import-not-at-top
  path = os.path.join(paths.REPO, 'examples', 'item_sequences.json')
  args = cli.build_parser().parse_args(['run', '--data', 'd', '--home', 'h',
                                        '--config', path])
  config = arguments.config_from_args(args)
  assert config == PipelineConfig().replace(**{
      'trainer.window': 50, 'trainer.shared_negatives': 16,
      'table.optimizer': 'sgd', 'table.learning_rate': 51.2})


def test_trainer_resume_root_is_one_stable_folder_of_the_pipeline_root():
  from pipelines import pipeline  # pylint: disable=g-import-not-at-top
  built = pipeline.create_pipeline('gs://bucket/tfx/', '/data', '/pushed')
  trainer, = [c for c in built.components if c.id == 'EmbeddingTrainer']
  assert trainer.exec_properties['resume_root'] == (
      'gs://bucket/tfx/EmbeddingTrainer/resume')


@pytest.mark.parametrize('field', ['related_pairs_file', 'similarity_file'])
def test_a_missing_validator_file_fails_when_the_pipeline_is_built(
    tmp_path, field):
  """Not at the validator, after training: also for `compile`."""
  from pipelines import pipeline  # pylint: disable=g-import-not-at-top
  missing = str(tmp_path / 'missing.tsv')
  config = PipelineConfig().replace(**{f'validator.{field}': missing})
  with pytest.raises(FileNotFoundError,
                     match=f'validator.{field} {missing}: no such file'):
    pipeline.create_components('/data', '/pushed', config)
  # A remote file is read, and checked, where the validator runs.
  remote = PipelineConfig().replace(**{f'validator.{field}': 'gs://b/x.tsv'})
  assert len(pipeline.create_components('/data', '/pushed', remote)) == 6


def test_run_with_a_missing_related_pairs_file_stops_before_any_component(
    tmp_path, capsys):
  from pipelines.cli.main import main  # pylint: disable=g-import-not-at-top
  (tmp_path / 'data' / 'span-1').mkdir(parents=True)
  missing = tmp_path / 'pairs.tsv'
  rc = main(['run', '--data', str(tmp_path / 'data'), '--home',
             str(tmp_path / 'home'), '--set',
             f'related_pairs_file="{missing}"'])
  captured = capsys.readouterr()
  assert rc == 2
  assert captured.err.strip() == (
      f'error: validator.related_pairs_file {missing}: no such file')
  assert 'running ...' not in captured.out
  assert not (tmp_path / 'home' / 'metadata.sqlite').exists()


@pytest.mark.parametrize('content,message', [
    (b'{"trainer": ', 'not valid JSON'),
    (b'[1, 2]', 'expected a JSON object'),
    (b'\xff\xfe{\x00}\x00', 'not UTF-8'),
])
def test_a_bad_config_file_is_named_on_one_line(tmp_path, capsys, content,
                                                message):
  from pipelines.cli.main import main  # pylint: disable=g-import-not-at-top
  path = tmp_path / 'config.json'
  path.write_bytes(content)
  rc = main(['run', '--data', str(tmp_path), '--home', str(tmp_path / 'h'),
             '--config', str(path)])
  err = capsys.readouterr().err.strip()
  assert rc == 2
  assert err.startswith(f'error: --config {path}: {message}'), err
  assert len(err.splitlines()) == 1
