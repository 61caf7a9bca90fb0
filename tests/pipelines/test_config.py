import dataclasses
import json
import os
import typing

import pytest

from pipelines.config import PipelineConfig
from tests.support import paths
from tpu_embeddings.core import settings
from tpu_embeddings.training.config import TableConfig
from tpu_embeddings.training.config import TrainerConfig


def test_spec_follows_the_config():
  spec = PipelineConfig(table=TableConfig(
      dim=8, optimizer='adam', learning_rate=0.01)).embedding_spec()
  assert spec.tables[0].dim == 8 and spec.optimizer.kind == 'adam'
  assert 'initial_accumulator_value' not in spec.optimizer.hyperparameters
  adagrad = PipelineConfig(
      table=TableConfig(initial_accumulator_value=0.5)).embedding_spec()
  assert adagrad.optimizer.hyperparameters['initial_accumulator_value'] == 0.5


def test_a_bare_trainer_trains_the_cli_s_default_table():
  """One table default: the trainer without an embedding_spec, and the
  built-in module reading it, train what the CLI's table.* defaults give."""
  from tpu_embeddings.models import skipgram_module
  from tpu_embeddings.models.context import ModelContext
  cli = PipelineConfig().embedding_spec()
  assert [(t.name, t.dim) for t in cli.tables] == [
      ('tokens', TableConfig().dim), ('contexts', TableConfig().dim)]
  assert TrainerConfig().spec() == cli
  assert skipgram_module.embedding_spec(
      ModelContext(settings=TrainerConfig())) == cli


def test_unknown_field_is_named():
  with pytest.raises(ValueError, match="unknown field 'steps'"):
    PipelineConfig.from_json(json.dumps({'steps': 3}))


@pytest.mark.parametrize('name,meant', [
    ('trainer.windw', "'trainer.window'"),    # a misspelt field
    ('windw', "'trainer.window'"),            # the same without a section
    ('trainer.dim', "'table.dim'"),           # a field of another section
    ('epochz', "'trainer.epochs'"),
])
def test_an_unknown_field_names_the_one_meant(name, meant):
  with pytest.raises(ValueError, match=f"unknown field '{name}'; did you "
                     f'mean {meant}\\? fields are '):
    PipelineConfig.from_dict({name: 1})


def test_a_field_like_none_suggests_none():
  with pytest.raises(ValueError) as raised:
    PipelineConfig.from_dict({'xyz': 1})
  assert 'did you mean' not in str(raised.value)
  assert 'fields are example_gen.' in str(raised.value)


def test_each_component_gets_its_section_of_the_config():
  from pipelines import pipeline
  from tpu_embeddings.core import settings
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
  from pipelines.cli import arguments
  from pipelines.cli import main as cli
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
  from pipelines.cli import arguments
  from pipelines.cli import main as cli
  path = os.path.join(paths.REPO, 'examples', 'item_sequences.json')
  args = cli.build_parser().parse_args(['run', '--data', 'd', '--home', 'h',
                                        '--config', path])
  config = arguments.config_from_args(args)
  assert config == PipelineConfig().replace(**{
      'trainer.window': 50, 'trainer.shared_negatives': 4,
      'trainer.batch_size': 512, 'trainer.epochs': 3,
      'trainer.corpus_scaling': False, 'trainer.log_every': 1000,
      'table.optimizer': 'sgd',
      'table.learning_rate': 51.2, 'table.dim': 64})


def test_trainer_resume_root_is_one_stable_folder_of_the_pipeline_root():
  from pipelines import pipeline
  built = pipeline.create_pipeline('gs://bucket/tfx/', '/data', '/pushed')
  trainer, = [c for c in built.components if c.id == 'EmbeddingTrainer']
  assert trainer.exec_properties['resume_root'] == (
      'gs://bucket/tfx/EmbeddingTrainer/resume')


@pytest.mark.parametrize('field', ['related_pairs_file', 'similarity_file'])
def test_a_missing_validator_file_fails_when_the_pipeline_is_built(
    tmp_path, field):
  """Not at the validator, after training: also for `compile`."""
  from pipelines import pipeline
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
  from pipelines.cli.main import main
  (tmp_path / 'data' / 'span-1').mkdir(parents=True)
  (tmp_path / 'data' / 'span-1' / 'a.txt').write_text('a b\n')
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
  from pipelines.cli.main import main
  path = tmp_path / 'config.json'
  path.write_bytes(content)
  rc = main(['run', '--data', str(tmp_path), '--home', str(tmp_path / 'h'),
             '--config', str(path)])
  err = capsys.readouterr().err.strip()
  assert rc == 2
  assert err.startswith(f'error: --config {path}: {message}'), err
  assert len(err.splitlines()) == 1


def _numeric(kind) -> bool:
  options = [k for k in typing.get_args(kind) if k is not type(None)]
  return (options[0] if typing.get_origin(kind) is typing.Union else
          kind) in (int, float)


def test_every_numeric_setting_states_its_bounds():
  unbounded = []
  for section, config in PipelineConfig.sections().items():
    hints = typing.get_type_hints(type(config))
    unbounded += [f'{section}.{f.name}' for f in dataclasses.fields(config)
                  if _numeric(hints[f.name])
                  and settings.BOUNDS not in f.metadata]
  assert not unbounded


# What real TPU training sets: tables of billions of rows, thousands of
# dimensions, windows of hundreds, batches of a million pairs.
REAL = {'trainer.window': 300, 'trainer.negatives': 64,
        'trainer.batch_size': 1 << 20, 'trainer.epochs': 100,
        'trainer.train_steps': 50_000_000, 'trainer.shared_negatives': 1024,
        'table.dim': 4096, 'table.learning_rate': 100.0,
        'vocabulary.max_tokens': 3_000_000_000, 'validator.k': 1000,
        'validator.min_recall_at_k': 0.5, 'validator.max_mean_cosine': 0.999,
        'validator.regression_margin': 0.5, 'pusher.keep_versions': 100}
# Values no training can use, and the line that refuses each.
ABSURD = [
    ('trainer.window', 1_000_000_000, 'EmbeddingTrainer parameter window '
     'must be an integer >= 1 and <= 1000, got 1,000,000,000'),
    ('trainer.negatives', 100_000, 'EmbeddingTrainer parameter negatives '
     'must be an integer >= 1 and <= 1000, got 100,000'),
    ('trainer.batch_size', 1 << 30, 'batch_size must be an integer >= 1 and '
     '<= 4,194,304, got 1,073,741,824'),
    ('trainer.epochs', 1_000_000, 'epochs must be an integer >= 0 and <= '
     '1000, got 1,000,000'),
    ('trainer.train_steps', 10**12, 'train_steps must be an integer >= 0 and '
     '<= 1,000,000,000'),
    ('trainer.log_every', 10**9, 'log_every must be an integer >= 1 and <= '
     '100,000'),
    ('table.dim', 1_000_000, 'table parameter dim must be an integer >= 1 '
     'and <= 8192, got 1,000,000'),
    ('table.learning_rate', 0, 'learning_rate must be a number >= 1e-09'),
    ('validator.k', 10**8, 'validator parameter k must be an integer >= 1 and '
     '<= 10,000, got 100,000,000'),
    ('validator.max_mean_cosine', 2, 'max_mean_cosine must be a number >= -1 '
     'and <= 1, got 2'),
    ('validator.min_recall_at_k', 1.5, 'min_recall_at_k must be a number >= 0 '
     'and <= 1, got 1.5'),
    ('validator.max_eval_loss', -1, 'max_eval_loss must be a number >= 0'),
    ('validator.regression_margin', 50, 'regression_margin must be a number '
     '>= 0 and <= 1, got 50'),
    ('trainer.subsample', 0.5, 'subsample must be a number >= 0 and <= 0.1'),
    ('vocabulary.min_count', 10**12, 'min_count must be an integer >= 1 and '
     '<= 1,000,000,000'),
    ('example_gen.span_window', 100_000, 'span_window must be an integer >= '
     '1 and <= 3660'),
    ('exporter.num_oov_buckets', 10**7, 'num_oov_buckets must be an integer '
     '>= 1 and <= 100,000'),
]


def test_real_tpu_values_are_accepted():
  config = PipelineConfig.from_dict(REAL)
  assert config.trainer.window == 300 and config.table.dim == 4096
  assert config.embedding_spec().tables[0].dim == 4096


@pytest.mark.parametrize('name, value, message', ABSURD,
                         ids=[name for name, _, _ in ABSURD])
def test_absurd_values_are_refused_naming_the_bound(name, value, message):
  with pytest.raises(ValueError) as e:
    PipelineConfig.from_dict({name: value})
  assert message in str(e.value)


@pytest.mark.parametrize('field, value', [
    ('span_window', 2), ('train_buckets', 4), ('eval_buckets', 2),
    ('follow_symlinks', True)])
def test_a_text_only_example_gen_setting_is_refused_for_stock_formats(
    field, value):
  """The stock ExampleGens read pre-split files: a hash split, several
  spans or symlinks would change nothing."""
  with pytest.raises(ValueError, match=(
      rf'^example_gen.{field} applies only to format "text" .*remove it '
      "for format 'csv'$")):
    PipelineConfig.from_dict({'example_gen.format': 'csv',
                              f'example_gen.{field}': value})
  assert getattr(PipelineConfig.from_dict(
      {f'example_gen.{field}': value}).example_gen, field) == value
