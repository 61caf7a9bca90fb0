import pytest

from components import vocabulary_file


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


@pytest.mark.parametrize('content,message', [
    ('', 'is empty'),
    ('a\t1\nb\n', 'line 2'),
    ('a\tmany\n', 'line 1'),
])
def test_bad_files_are_clear_errors(tmp_path, content, message):
  (tmp_path / vocabulary_file.VOCABULARY_FILENAME).write_text(content)
  with pytest.raises(vocabulary_file.VocabularyError, match=message):
    vocabulary_file.read(str(tmp_path))


def test_missing_file(tmp_path):
  with pytest.raises(vocabulary_file.VocabularyError, match='no vocabulary.tsv'):
    vocabulary_file.read(str(tmp_path))
