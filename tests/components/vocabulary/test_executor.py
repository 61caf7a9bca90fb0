"""Vocabulary executor on real Examples files with a real Beam pipeline."""

import collections
import random

import pytest
import tensorflow as tf
from tfx.types import standard_artifacts

from components.vocabulary import executor
from tests.support import vocabulary_runs
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import vocabulary_file


def _write(path, sequences):
  options = tf.io.TFRecordOptions(compression_type='GZIP')
  with tf.io.TFRecordWriter(str(path), options) as w:
    for seq in sequences:
      w.write(examples_io.make_example(seq).SerializeToString())


def _run(tmp_path, **config):
  vocab = vocabulary_runs.run(tmp_path, span=4, **config)
  return vocabulary_file.read(vocab.uri), vocab


@pytest.mark.slow
def test_counts_every_train_file_like_a_counter(tmp_path, monkeypatch):
  monkeypatch.setattr(executor, '_RECORDS_PER_BATCH', 7)
  monkeypatch.setattr(executor, '_PARTIALS', 3)
  rng = random.Random(0)
  train = tmp_path / 'examples' / 'Split-train'
  train.mkdir(parents=True)
  counts = collections.Counter()
  for i in range(3):
    sequences = [[f'w{rng.randint(0, 40)}' for _ in range(rng.randint(1, 9))]
                 + ['café'] for _ in range(100)]
    counts.update(t for s in sequences for t in s)
    _write(train / f'data_tfrecord-{i:05d}-of-00004.gz', sequences)
  _write(train / 'data_tfrecord-00003-of-00004.gz', [])
  eval_dir = tmp_path / 'examples' / 'Split-eval'
  eval_dir.mkdir()
  _write(eval_dir / 'data_tfrecord-00000-of-00001.gz', [['only-in-eval']])
  vocab, artifact = _run(tmp_path)
  assert dict(zip(vocab.tokens, vocab.counts)) == dict(counts)
  assert vocab == vocabulary_file.from_counts(counts)
  assert artifact.get_int_custom_property('span') == 4


@pytest.mark.slow
def test_min_count_and_max_tokens(tmp_path):
  train = tmp_path / 'examples' / 'Split-train'
  train.mkdir(parents=True)
  _write(train / 'data_tfrecord-00000-of-00001.gz',
         [['a', 'b', 'a', 'c'], ['a', 'b', 'd']])
  vocab, _ = _run(tmp_path, min_count=2)
  assert vocab.tokens == ('a', 'b') and vocab.counts == (3, 2)
  vocab, _ = _run(tmp_path, max_tokens=3, min_count=1)
  assert vocab.tokens == ('a', 'b', 'c')
  with pytest.raises(ValueError, match='no token reaches min_count=9'):
    _run(tmp_path, min_count=9)


@pytest.mark.slow
def test_counts_written_by_the_example_gen_give_the_same_vocabulary(
    tmp_path, monkeypatch):
  """The corpus ExampleGen's token counts are summed instead of reading the
  records again; without them the records are counted: same vocabulary."""
  from components.corpus_example_gen import component
  from components.corpus_example_gen import executor as gen_executor
  from components.corpus_example_gen import ranges
  monkeypatch.setattr(ranges, 'MIN_RANGE_BYTES', 500)
  rng = random.Random(1)
  data = tmp_path / 'data' / 'span-1'
  data.mkdir(parents=True)
  (data / 'a.txt').write_text('\n'.join(
      ' '.join(f't{rng.randint(0, 60)}' for _ in range(rng.randint(0, 12)))
      for _ in range(500)))
  props = dict(component.corpus_example_gen(str(tmp_path / 'data'))
               .exec_properties)
  props['input_config'] = props['input_config'].replace('span-{SPAN}',
                                                        'span-1')
  examples = standard_artifacts.Examples()
  examples.uri = str(tmp_path / 'examples')
  gen_executor.Executor().Do({}, {'examples': [examples]}, props)
  assert len(examples_io.token_count_files(examples.uri, 'train')) > 2
  summed, _ = _run(tmp_path, min_count=2)
  with pytest.raises(ValueError, match='no token reaches min_count=9999 '):
    _run(tmp_path, min_count=9999)
  tf.io.gfile.rmtree(str(tmp_path / 'examples' / examples_io.TOKEN_COUNTS_DIR))
  counted, _ = _run(tmp_path, min_count=2)
  assert summed == counted and len(summed) > 40
