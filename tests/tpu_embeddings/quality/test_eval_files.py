"""The validator's similarity and related-pairs files."""

import pytest

from tpu_embeddings.quality import eval_files


def test_read_similarity_file_accepts_header_and_names_bad_lines(tmp_path):
  good = tmp_path / 'wordsim.tab'
  good.write_text('Word 1\tWord 2\tHuman (mean)\ntiger\tcat\t7.35\n'
                  'book\tpaper\t7.46\n\n')
  assert eval_files.read_similarity_file(str(good)) == [
      ('tiger', 'cat', 7.35), ('book', 'paper', 7.46)]
  bad = tmp_path / 'bad.tab'
  bad.write_text('tiger\tcat\t7.35\nbook\tpaper\thigh\n')
  with pytest.raises(ValueError, match=r'bad.tab line 2: score .high.'):
    eval_files.read_similarity_file(str(bad))
  short = tmp_path / 'short.tab'
  short.write_text('tiger\tcat\n')
  with pytest.raises(ValueError, match='line 1: expected'):
    eval_files.read_similarity_file(str(short))
  with pytest.raises(FileNotFoundError, match='missing.tab'):
    eval_files.read_similarity_file(str(tmp_path / 'missing.tab'))


def test_read_related_pairs(tmp_path):
  path = tmp_path / 'related_pairs.tsv'
  path.write_text('a\tb\nc\td\textra\n')
  assert eval_files.read_related_pairs(str(path)) == [('a', 'b'), ('c', 'd')]
  path.write_text('a b\n')
  with pytest.raises(ValueError, match='line 1: expected "tokenA<TAB>tokenB"'):
    eval_files.read_related_pairs(str(path))


def test_fields_keep_unicode_spaces_inside_tokens(tmp_path):
  # Tokens split on ASCII whitespace only, so U+00A0 and U+3000 are theirs.
  path = tmp_path / 'related_pairs.tsv'
  path.write_text('\u00a0a\u00a0 \tb\u3000\n', encoding='utf-8')
  assert eval_files.read_related_pairs(str(path)) == [('\u00a0a\u00a0',
                                                       'b\u3000')]
  sim = tmp_path / 'sim.tab'
  sim.write_text('x\u00a0\ty\t1.5\n', encoding='utf-8')
  assert eval_files.read_similarity_file(str(sim)) == [('x\u00a0', 'y', 1.5)]


def test_read_analogy_file_reads_gensims_questions_words():
  import gensim.test.utils
  questions = eval_files.read_analogy_file(
      gensim.test.utils.datapath('questions-words.txt'))
  assert len(questions) == 19544
  assert questions[0] == ('Athens', 'Greece', 'Baghdad', 'Iraq')


def test_read_analogy_file_names_a_bad_line(tmp_path):
  bad = tmp_path / 'analogies.txt'
  bad.write_text(': capitals\nAthens Greece Baghdad Iraq\nParis France\n')
  with pytest.raises(ValueError, match='analogies.txt line 3: expected four'):
    eval_files.read_analogy_file(str(bad))
  empty = tmp_path / 'empty.txt'
  empty.write_text(': capitals\n')
  with pytest.raises(ValueError, match='has no questions'):
    eval_files.read_analogy_file(str(empty))
