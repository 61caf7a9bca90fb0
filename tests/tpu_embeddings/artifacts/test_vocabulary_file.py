import pytest

from tpu_embeddings.artifacts import vocabulary_file


def test_order_min_count_and_max_tokens():
  counts = {'b': 3, 'a': 3, 'c': 5, 'd': 1, 'é': 3}
  vocab = vocabulary_file.from_counts(counts)
  # Count descending, then token ascending by UTF-8 bytes.
  assert vocab.tokens == ('c', 'a', 'b', 'é', 'd')
  assert vocab.counts == (5, 3, 3, 3, 1)
  assert vocabulary_file.from_counts(counts, min_count=3).tokens == (
      'c', 'a', 'b', 'é')
  assert vocabulary_file.from_counts(counts, max_tokens=2).tokens == ('c', 'a')
  assert vocab.ids['b'] == 2


def test_write_read_round_trip(tmp_path):
  vocab = vocabulary_file.from_counts({'x': 2, 'yé': 7})
  path = vocabulary_file.write(str(tmp_path), vocab)
  assert open(path, encoding='utf-8').read() == 'yé\t7\nx\t2\n'
  assert vocabulary_file.read(str(tmp_path)) == vocab
  assert vocabulary_file.read(path) == vocab
  asset = tmp_path / 'tokens.txt'
  vocabulary_file.write_tokens(str(asset), vocab)
  assert asset.read_text(encoding='utf-8') == 'yé\nx\n'


@pytest.mark.parametrize('min_count,max_tokens', [(1, 0), (3, 0), (2, 7),
                                                  (1, 1), (10**9, 0)])
def test_write_counts_writes_what_write_writes(tmp_path, min_count,
                                                max_tokens):
  import random

  import pyarrow as pa
  rng = random.Random(min_count + max_tokens)
  words = ['a', 'b', 'é', '東京', 'ab', 'Z', 'a\u00e9'] + [
      f't{i}' for i in range(300)]
  counts = {w: rng.choice([1, 2, 3, 3, 40, rng.randint(1, 10**9)])
            for w in words}
  table = pa.table({'values': pa.array([w.encode() for w in counts],
                                       pa.binary()),
                    'counts': pa.array(list(counts.values()), pa.int64())})
  vocab = vocabulary_file.from_counts(counts, min_count, max_tokens)
  expected = vocabulary_file.write(str(tmp_path / 'dict'), vocab)
  assert vocabulary_file.write_counts(str(tmp_path / 'table'), table,
                                      min_count, max_tokens) == len(vocab)
  assert (tmp_path / 'table' / vocabulary_file.VOCABULARY_FILENAME
          ).read_bytes() == open(expected, 'rb').read()


@pytest.mark.parametrize('content,message', [
    (b'', 'is empty'),
    (b'a\t1\nb\n', 'line 2'),
    (b'a\tmany\n', 'line 1'),
    (b'a\t1\n\xff\t2\n', 'line 2: not UTF-8'),
])
def test_bad_files_are_clear_errors(tmp_path, content, message):
  (tmp_path / vocabulary_file.VOCABULARY_FILENAME).write_bytes(content)
  with pytest.raises(vocabulary_file.VocabularyError, match=message):
    vocabulary_file.read(str(tmp_path))


def test_line_ends_and_a_last_line_without_one(tmp_path):
  path = tmp_path / vocabulary_file.VOCABULARY_FILENAME
  for content in (b'a\t3\r\nb\t2\r\n', b'a\t3\nb\t2'):
    path.write_bytes(content)
    read = vocabulary_file.read(str(tmp_path))
    assert (read.tokens, read.counts) == (('a', 'b'), (3, 2))


def test_missing_file(tmp_path):
  with pytest.raises(vocabulary_file.VocabularyError,
                     match='no vocabulary.tsv'):
    vocabulary_file.read(str(tmp_path))
