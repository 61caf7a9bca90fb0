import os
import shutil

import pytest

from pipelines.config import PipelineConfig
from pipelines.local import retrain


def test_span_regex_and_latest_span(tmp_path):
  for name in ('span-1', 'span-2', 'span-10', 'span-x', 'other'):
    (tmp_path / name).mkdir()
    (tmp_path / name / 'a.txt').write_text('a b\n')
  (tmp_path / 'span-11').mkdir()  # empty folder: not a landed span
  assert retrain.latest_data_span(str(tmp_path), 'span-{SPAN}/*') == 10
  assert retrain.span_regex('data/day-{SPAN:3}/*.txt').match('day-007')
  with pytest.raises(ValueError, match='has no {SPAN}'):
    retrain.span_regex('all/*')


def test_a_span_of_the_stock_formats_holds_its_files_in_split_folders(
    tmp_path):
  (tmp_path / 'span-1' / 'train').mkdir(parents=True)
  (tmp_path / 'span-1' / 'train' / 'part-00000.csv').write_text('a\n1\n')
  (tmp_path / 'span-2' / 'train').mkdir(parents=True)  # no file yet
  assert retrain.latest_data_span(str(tmp_path), 'span-{SPAN}/*') == 1


def test_nothing_pushed_means_run(tmp_path):
  (tmp_path / 'span-1').mkdir()
  (tmp_path / 'span-1' / 'a.txt').write_text('a\n')
  d = retrain.decide(str(tmp_path), str(tmp_path / 'pushed'), 'span-{SPAN}/*')
  assert d.run and d.data_span == 1 and not d.warm_start_uri


def test_no_span_means_no_run(tmp_path):
  d = retrain.decide(str(tmp_path), str(tmp_path / 'pushed'), 'span-{SPAN}/*')
  assert not d.run and 'no span folders' in d.reason
  with pytest.raises(FileNotFoundError):
    retrain.decide(str(tmp_path / 'missing'), str(tmp_path), 'span-{SPAN}/*')


def test_span_folders_without_input_files_are_named_with_the_data_root(
    tmp_path):
  root = str(tmp_path)
  with pytest.raises(ValueError) as e:
    retrain.check_span_files(root, ['span-{SPAN}/*'])
  assert str(e.value) == (f'data root {root} has no span folder (span-{{SPAN}}'
                          "); put each span's files in one, e.g. span-1/")
  (tmp_path / 'span-1').mkdir()
  (tmp_path / 'span-2').mkdir()
  with pytest.raises(ValueError) as e:
    retrain.check_span_files(root, ['span-{SPAN}/*'])
  assert str(e.value) == (
      f'data root {root}: no file matches span-{{SPAN}}/* in span folders '
      "span-1, span-2; put the span's files there, or remove the empty "
      'folder')
  (tmp_path / 'span-1' / 'a.txt').write_text('a b\n')
  retrain.check_span_files(root, ['span-{SPAN}/*'])  # span 1 is read
  # The stock formats read train/ and eval/ folders of a span: both.
  split = ['span-{SPAN}/train/*', 'span-{SPAN}/eval/*']
  (tmp_path / 'span-2' / 'train').mkdir()
  (tmp_path / 'span-2' / 'train' / 'a.csv').write_text('x\n1\n')
  with pytest.raises(ValueError, match=r'no file matches span-\{SPAN\}/train/'
                     r'\* and span-\{SPAN\}/eval/\* in span folders'):
    retrain.check_span_files(root, split)
  (tmp_path / 'span-2' / 'eval').mkdir()
  (tmp_path / 'span-2' / 'eval' / 'b.csv').write_text('x\n1\n')
  retrain.check_span_files(root, split)


def test_lock_is_exclusive_and_released(tmp_path):
  with retrain.RetrainLock(str(tmp_path)):
    with pytest.raises(retrain.LockHeld, match=f'pid {os.getpid()}'):
      with retrain.RetrainLock(str(tmp_path)):
        pass
  with retrain.RetrainLock(str(tmp_path)):
    pass


def test_a_lock_file_that_refuses_writes_still_locks(tmp_path):
  # /dev/full refuses every write, as a full disk refuses the holder's pid.
  (tmp_path / retrain.LOCK_FILENAME).symlink_to('/dev/full')
  with retrain.RetrainLock(str(tmp_path)):
    with pytest.raises(retrain.LockHeld, match='pid unknown'):
      with retrain.RetrainLock(str(tmp_path)):
        pass
  with retrain.RetrainLock(str(tmp_path)):
    pass


def _decision(base):
  return retrain.Decision(True, 'span 2 is newer', 2, 1, 1, base)


def test_a_base_that_fits_the_spec_warm_starts(tmp_path):
  from tpu_embeddings.training.config import TableConfig
  spec = TableConfig().embedding_spec()
  spec.save(str(tmp_path))
  assert retrain.choose_warm_start(_decision(str(tmp_path)), spec,
                                   True) == (str(tmp_path), '')
  assert retrain.choose_warm_start(_decision(''), spec, True) == ('', '')
  # Nothing to seed from: the model's spec is not needed.
  assert retrain.choose_warm_start(_decision(''), None, True) == ('', '')


@pytest.mark.parametrize('changed, words', [
    ({'dim': 16}, 'tokens: warm start from'),
    ({'context_table': True}, "tokens, contexts: warm start from"),
    ({'optimizer': 'sgd'}, 'optimizer'),
])
def test_a_changed_spec_cold_starts_naming_its_tables(tmp_path, changed,
                                                      words):
  from tpu_embeddings.training.config import TableConfig
  TableConfig(context_table=False).embedding_spec().save(str(tmp_path))
  spec = TableConfig(**{'context_table': False, **changed}).embedding_spec()
  uri, warning = retrain.choose_warm_start(_decision(str(tmp_path)), spec,
                                           True)
  assert uri == ''
  assert warning.startswith('cold start of tables tokens') and words in warning


def test_warm_start_from_pushed_false_is_honoured(tmp_path):
  from tpu_embeddings.training.config import TableConfig
  spec = TableConfig().embedding_spec()
  spec.save(str(tmp_path))
  uri, warning = retrain.choose_warm_start(_decision(str(tmp_path)), spec,
                                           False)
  assert uri == '' and 'warm_start_from_pushed=false' in warning


def test_the_planned_spec_is_the_module_files_own(tmp_path):
  """A two-tower module retrained over a skip-gram base: named by its own
  tables, not skip-gram's."""
  from pipelines import model_settings
  from tests.support import interaction_fixtures
  from tpu_embeddings.training.config import TableConfig
  module_file = interaction_fixtures.MODULE_FILE
  config = model_settings.with_module_defaults({}, module_file)
  spec = retrain.planned_spec(config, module_file, '')
  assert [t.name for t in spec.tables] == ['user', 'item', 'category']
  TableConfig().embedding_spec().save(str(tmp_path / 'skipgram'))
  uri, warning = retrain.choose_warm_start(
      _decision(str(tmp_path / 'skipgram')), spec, True)
  assert uri == '' and warning.startswith(
      "cold start of tables user, item, category: warm start from ")
  assert "it has no table 'user'" in warning
  spec.save(str(tmp_path / 'two-tower'))
  assert retrain.choose_warm_start(_decision(str(tmp_path / 'two-tower')),
                                   spec, True) == (str(tmp_path / 'two-tower'),
                                                   '')
  skipgram = retrain.planned_spec(PipelineConfig.from_dict({'dim': 16}), '',
                                  '')
  assert [(t.name, t.dim) for t in skipgram.tables] == [('tokens', 16),
                                                       ('contexts', 16)]


def test_a_cold_start_is_one_the_trainer_keeps():
  config = retrain.cold_start(PipelineConfig())
  assert config.trainer.warm_start_from_pushed is False


def test_a_copied_home_warm_starts_from_its_own_model(tmp_path):
  """Manifests name the source model relative to the home: `retrain` in a
  copy never reaches back into the original home."""
  from tests.support import pusher_exports
  from tpu_embeddings.push_root import publish
  home = tmp_path / 'home'
  model = home / 'pipeline' / 'EmbeddingTrainer' / 'model' / '4'
  model.mkdir(parents=True)
  publish.publish(str(home / 'pushed'), {
      'serving': pusher_exports.write_serving_model(str(tmp_path / 's'), 1.0),
      'hub': pusher_exports.write_hub_module(str(tmp_path / 'h'), 1.0)},
                  {'source_model': str(model), 'spans': [1]})
  copy = tmp_path / 'copy'
  shutil.copytree(home, copy)
  data = tmp_path / 'data'
  (data / 'span-2').mkdir(parents=True)
  (data / 'span-2' / 'a.txt').write_text('a b\n')
  for where in (home, copy):
    d = retrain.decide(str(data), str(where / 'pushed'), 'span-{SPAN}/*')
    assert d.run and d.warm_start_uri == str(
        where / 'pipeline' / 'EmbeddingTrainer' / 'model' / '4'), d
