"""The corpus ExampleGen transform on real files with a real Beam pipeline."""

import collections
import json

import apache_beam as beam
import pytest
import tensorflow as tf
from apache_beam.metrics.metric import MetricsFilter
from tfx.proto import range_config_pb2
from tfx.utils import proto_utils

from components.corpus_example_gen import component
from components.corpus_example_gen import executor
from tpu_embeddings.artifacts import examples_io


def _exec_properties(base, span=None, window=1, pattern='span-{SPAN}/*'):
  gen = component.corpus_example_gen(str(base), pattern=pattern,
                                     span_window=window)
  props = dict(gen.exec_properties)
  props['span'] = span
  return props


def _run(base, split_pattern, **kwargs):
  sink = base / 'found.json'
  p = beam.Pipeline()
  out = (p | executor._TextToExample(_exec_properties(base, **kwargs),
                                     split_pattern)
         | beam.Map(lambda r: [t.decode() for t in tf.train.Example.FromString(
             r).features.feature[examples_io.TOKENS_FEATURE].bytes_list.value])
         | beam.combiners.ToList())
  _ = out | beam.Map(lambda xs: sink.write_text(json.dumps(xs)))
  result = p.run()
  result.wait_until_finish()
  found = json.loads(sink.read_text())
  counters = {c.key.metric.name: c.committed for c in result.metrics().query(
      MetricsFilter().with_namespace(executor.METRICS_NAMESPACE))['counters']}
  return found, counters


def test_odd_lines_are_skipped_and_counted(tmp_path):
  """docs/failure_behaviour.md's limits, as literals: lines cut at 10,000
  tokens, tokens over 256 bytes dropped."""
  d = tmp_path / 'span-1'
  d.mkdir()
  long_line = ' '.join(f'w{i}' for i in range(10_005))
  (d / 'a.txt').write_bytes(
      b'alpha beta  gamma\n'
      b'caf\xc3\xa9 ok\n'       # valid UTF-8
      b'\n   \t\n'              # blank lines
      + b'x' * 257 + b' kept ' + b'y' * 256 + b'\n'
      + long_line.encode() + b'\n')
  found, counters = _run(tmp_path, 'span-1/*')
  by_first = {s[0]: s for s in found}
  assert by_first['alpha'] == ['alpha', 'beta', 'gamma']
  assert by_first['café'] == ['café', 'ok']
  assert by_first['kept'] == ['kept', 'y' * 256]
  assert by_first['w0'] == [f'w{i}' for i in range(10_000)]
  assert len(found) == 4
  assert counters['capped_lines'] == 1
  assert counters['dropped_long_tokens'] == 1
  assert counters['blank_lines'] == 2


@pytest.mark.parametrize('encoding, looks_like', [
    ('utf-16', 'UTF-16 LE (byte order mark)'),
    ('utf-16-be', 'UTF-16 BE'),
    ('utf-16-le', 'UTF-16 LE'),
    ('utf-32', 'UTF-32 LE (byte order mark)'),
    ('utf-32-be', 'UTF-32 BE'),
    ('latin-1', 'invalid UTF-8'),
])
def test_files_that_are_not_utf8_text_are_refused_by_name(
    tmp_path, encoding, looks_like):
  d = tmp_path / 'span-1'
  d.mkdir()
  (d / 'good.txt').write_text('alpha beta\n')
  (d / 'wide.txt').write_bytes('café au lait\nbeta gamma\n'.encode(encoding))
  with pytest.raises(ValueError) as e:
    _run(tmp_path, 'span-1/*')
  message = str(e.value)
  assert str(d / 'wide.txt') in message and looks_like in message
  assert 'good.txt' not in message and '\n' not in message
  if looks_like.startswith('UTF'):  # the iconv name of the encoding seen
    source = looks_like.split(' (')[0].replace(' ', '')
    assert f'iconv -f {source} -t UTF-8' in message


def test_bad_bytes_past_the_first_chunk_are_refused_while_reading(tmp_path):
  d = tmp_path / 'span-1'
  d.mkdir()
  good = b'alpha beta gamma\n' * (executor.FIRST_CHUNK_BYTES // 17 + 10)
  (d / 'latin.txt').write_bytes(good + b'caf\xe9 au lait\n')
  (d / 'nul.txt').write_bytes(good + b'binary\x00tail\n')
  for name, looks_like in (('latin.txt', 'invalid UTF-8'),
                           ('nul.txt', 'NUL byte')):
    pattern = f'span-1/{name}'
    with pytest.raises(Exception) as e:
      _run(tmp_path, pattern)
    assert str(d / name) in str(e.value) and looks_like in str(e.value)
    assert isinstance(e.value, ValueError), type(e.value)


def test_the_executor_reports_a_bad_line_as_one_line(tmp_path):
  """Beam appends the failing transform's label (multi-line here) to errors
  raised while the pipeline runs; the executor gives back the one line."""
  from tfx.types import standard_artifacts
  d = tmp_path / 'span-1'
  d.mkdir()
  good = b'alpha beta gamma\n' * (executor.FIRST_CHUNK_BYTES // 17 + 10)
  (d / 'latin.txt').write_bytes(good + b'caf\xe9 au lait\n')
  props = _exec_properties(tmp_path, span=1)
  props['input_config'] = props['input_config'].replace('span-{SPAN}',
                                                        'span-1')
  examples = standard_artifacts.Examples()
  examples.uri = str(tmp_path / 'examples')
  with pytest.raises(ValueError) as e:
    executor.Executor().Do({}, {'examples': [examples]}, props)
  message = str(e.value)
  assert message == (
      f'corpus ExampleGen: {d / "latin.txt"} is not UTF-8 text (invalid UTF-8 '
      '(byte 0xe9 at offset 3) of a line); convert it (e.g. iconv -t UTF-8) '
      'or move it out of the input')


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_token(tmp_path):
  d = tmp_path / 'span-1'
  d.mkdir()
  (d / 'bom.txt').write_bytes(b'\xef\xbb\xbfalpha beta\ngamma\n')
  found, _ = _run(tmp_path, 'span-1/*')
  assert sorted(found) == [['alpha', 'beta'], ['gamma']]


def test_empty_input_is_a_clear_error(tmp_path):
  (tmp_path / 'span-3').mkdir()
  (tmp_path / 'span-3' / 'empty.txt').write_text('\n  \n')
  with pytest.raises(ValueError, match=r'no token sequences under .*span-3'):
    _run(tmp_path, 'span-3/*')


def test_span_window_patterns(tmp_path):
  tmp_path = tmp_path / 'data'
  for span in (1, 2, 4):
    (tmp_path / f'span-{span}').mkdir(parents=True)
    (tmp_path / f'span-{span}' / 'a.txt').write_text(f's{span}\n')
  props = _exec_properties(tmp_path, span=4, window=3)
  # Span 3 does not exist and is skipped; span 1 is outside the window.
  assert executor.span_patterns(props, 'span-4/*', str(tmp_path)) == [
      'span-4/*', 'span-2/*']
  found, _ = _run(tmp_path, 'span-4/*', span=4, window=3)
  assert sorted(found) == [['s2'], ['s4']]


def test_bad_parameters():
  with pytest.raises(ValueError, match='span_window'):
    component.corpus_example_gen('/data', span_window=0)
  with pytest.raises(ValueError, match='buckets'):
    component.corpus_example_gen('/data', eval_buckets=0)


def test_fixed_span_uses_a_static_range():
  gen = component.corpus_example_gen('/data', span=5)
  rc = gen.exec_properties['range_config']
  if isinstance(rc, str):
    rc = proto_utils.json_to_proto(rc, range_config_pb2.RangeConfig())
  assert (rc.static_range.start_span_number == 5
          == rc.static_range.end_span_number)


def test_the_executor_writes_tfx_splits_with_tfx_hashing(tmp_path, monkeypatch):
  """Several ranges per file; each record in the split TFX's own partition
  function gives it; every non-blank line once."""
  from tfx.components.example_gen import base_example_gen_executor as base
  from tfx.components.util import examples_utils
  from tfx.proto import example_gen_pb2
  from tfx.types import standard_artifacts

  from components.corpus_example_gen import ranges
  monkeypatch.setattr(ranges, 'MIN_RANGE_BYTES', 1000)
  d = tmp_path / 'span-1'
  d.mkdir()
  lines = [f'w{i} w{i % 7} w{i % 3}' for i in range(600)]
  (d / 'a.txt').write_text('\n'.join(lines[:400]) + '\n\n')
  (d / 'b.txt').write_text('\n'.join(lines[400:]))
  props = _exec_properties(tmp_path, span=1)
  props['input_config'] = props['input_config'].replace('span-{SPAN}',
                                                        'span-1')
  examples = standard_artifacts.Examples()
  examples.uri = str(tmp_path / 'examples')
  executor.Executor().Do({}, {'examples': [examples]}, props)
  assert examples.split_names == '["train", "eval"]'
  assert examples_utils.get_payload_format(examples) == (
      example_gen_pb2.FORMAT_TF_EXAMPLE)
  split_config = example_gen_pb2.SplitConfig(splits=[
      example_gen_pb2.SplitConfig.Split(name='train', hash_buckets=9),
      example_gen_pb2.SplitConfig.Split(name='eval', hash_buckets=1)])
  found = []
  for index, split in enumerate(('train', 'eval')):
    tokens = collections.Counter()
    files = examples_io.split_files(examples.uri, split)
    assert len(files) > 2 and all(
        f.split('/')[-1].startswith('data_tfrecord-') and f.endswith('.gz')
        for f in files)
    for record in tf.data.TFRecordDataset(files, 'GZIP').as_numpy_iterator():
      assert base._PartitionFn(record, 2, [9, 10], split_config) == index
      found.append(' '.join(t.decode() for t in tf.train.Example.FromString(
          record).features.feature[examples_io.TOKENS_FEATURE].bytes_list.value))
      tokens.update(found[-1].split())
    count_files = examples_io.token_count_files(examples.uri, split)
    assert len(count_files) == len(files)
    summed = examples_io.fold_counts(
        [examples_io.read_counts(p) for p in count_files])
    assert dict(zip((v.decode() for v in summed['values'].to_pylist()),
                    summed['counts'].to_pylist())) == tokens
  assert sorted(found) == sorted(lines)
  assert not [p for p in (tmp_path / 'examples').rglob('*') if
              p.name.startswith('.')]
