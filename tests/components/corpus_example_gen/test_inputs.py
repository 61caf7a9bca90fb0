"""What the corpus ExampleGen reads: plain files inside the data root, by the
executor on real files; and what it reports skipping."""

import gzip
import os

import pytest
from tfx.types import standard_artifacts

from components import keys
from components.corpus_example_gen import component
from components.corpus_example_gen import executor
from components.corpus_example_gen.config import ExampleGenConfig
from pipelines.local import retrain


def _span(tmp_path, lines=('alpha beta gamma',)):
  d = tmp_path / 'data' / 'span-1'
  d.mkdir(parents=True)
  (d / 'a.txt').write_text('\n'.join(lines) + '\n')
  return d


def _do(tmp_path, **settings):
  gen = component.corpus_example_gen(str(tmp_path / 'data'), **settings)
  props = dict(gen.exec_properties)
  props['span'] = 1
  props['input_config'] = props['input_config'].replace('span-{SPAN}',
                                                        'span-1')
  examples = standard_artifacts.Examples()
  examples.uri = str(tmp_path / 'examples')
  executor.Executor().Do({}, {'examples': [examples]}, props)
  return examples


def test_a_symlink_in_a_span_folder_is_refused_unless_a_setting_says_so(
    tmp_path):
  d = _span(tmp_path)
  outside = tmp_path / 'secret.txt'
  outside.write_text('root x 0 0\n')
  os.symlink(outside, d / 'link.txt')
  with pytest.raises(ValueError, match=r'link.txt is or passes through a '
                     r'symlink .*example_gen.follow_symlinks=true'):
    _do(tmp_path)
  assert not (tmp_path / 'examples' / 'Split-train').exists() or not list(
      (tmp_path / 'examples' / 'Split-train').iterdir())
  examples = _do(tmp_path, follow_symlinks=True)
  assert examples.get_int_custom_property(keys.CAPPED_LINES) == 0


def test_a_symlinked_span_folder_is_refused(tmp_path):
  real = tmp_path / 'elsewhere'
  real.mkdir()
  (real / 'a.txt').write_text('alpha beta\n')
  (tmp_path / 'data').mkdir()
  os.symlink(real, tmp_path / 'data' / 'span-1')
  with pytest.raises(ValueError, match='passes through a symlink'):
    executor.check_files(str(tmp_path / 'data'), ['span-1/*'])


def test_sub_folders_fifos_and_compressed_files_are_refused_by_name(tmp_path):
  d = _span(tmp_path)
  base = str(tmp_path / 'data')
  (d / 'sub').mkdir()
  with pytest.raises(ValueError, match=r'span-1/sub is a folder; a span '
                     'folder holds only text files'):
    executor.check_files(base, ['span-1/*'])
  (d / 'sub').rmdir()
  os.mkfifo(d / 'pipe')
  with pytest.raises(ValueError, match='span-1/pipe is not a regular file'):
    executor.check_files(base, ['span-1/*'])
  os.remove(d / 'pipe')
  with gzip.open(d / 'b.txt.gz', 'wt') as f:
    f.write('alpha beta\n')
  with pytest.raises(ValueError, match=r'b.txt.gz is gzip-compressed; '
                     r'decompress it \(gunzip\)'):
    executor.check_files(base, ['span-1/*'])


def test_a_pre_split_span_names_the_stock_example_gen_format(tmp_path):
  from pipelines import demo_interactions
  shape = demo_interactions.Shape(items=20, categories=2, sequences=4,
                                  min_length=3, max_length=5)
  demo_interactions.write_examples(str(tmp_path / 'data'), shape)
  with pytest.raises(ValueError, match=r'span-1/(train|eval) is a folder of '
                     r'a pre-split span.*set example_gen.format=csv'):
    executor.check_files(str(tmp_path / 'data'), ['span-1/*'])


def test_patterns_cannot_leave_the_data_root(tmp_path):
  for pattern in ('../span-{SPAN}/*', '/etc/*', 'span-{SPAN}/../../*'):
    with pytest.raises(ValueError, match='without ".." segments'):
      ExampleGenConfig(pattern=pattern)
  d = _span(tmp_path)
  (tmp_path / 'secret.txt').write_text('root x 0 0\n')
  # The executor checks the paths a pattern matches as well.
  with pytest.raises(ValueError, match='secret.txt is outside the data root'):
    executor.check_files(str(d), ['../../*.txt'])


def test_span_folders_without_a_span_number_are_named(tmp_path):
  _span(tmp_path)
  retrain.check_span_folders(str(tmp_path / 'data'), 'span-{SPAN}/*')
  (tmp_path / 'data' / 'span-x').mkdir()
  with pytest.raises(ValueError, match=r"'span-x' is named like a span folder "
                     r"\(span-\{SPAN\}\) but 'x' is not a span number"):
    retrain.check_span_folders(str(tmp_path / 'data'), 'span-{SPAN}/*')


def test_capped_lines_and_dropped_tokens_are_recorded(tmp_path):
  long_line = ' '.join(f'w{i}' for i in range(10_003))  # cut at 10,000
  d = _span(tmp_path, ['alpha beta', long_line, long_line,
                       'x' * 257 + ' kept ' + 'y' * 256])  # over 256 bytes
  examples = _do(tmp_path)
  assert examples.get_int_custom_property(keys.CAPPED_LINES) == 2
  assert examples.get_int_custom_property(keys.DROPPED_LONG_TOKENS) == 1
  assert examples.get_string_custom_property(
      keys.FIRST_SKIPPING_FILE) == str(d / 'a.txt')
