"""gutenberg_text on a small clone laid out like rcdm-uga/Gutenberg_Text."""

import pytest

from benchmarks import gutenberg_text


def book(title, paragraphs, language='English', start=True, newline='\n'):
  """A book with a Project Gutenberg header, licence and footer."""
  lines = [f'The Project Gutenberg EBook of {title}', '',
           'This eBook is for the use of anyone anywhere at no cost', '',
           f'Title: {title}', f'Language: {language}', '']
  if start:
    lines += [f'*** START OF THIS PROJECT GUTENBERG EBOOK {title} ***', '']
  for paragraph in paragraphs:
    lines += paragraph.split('|') + ['', '']
  lines += [f'*** END OF THIS PROJECT GUTENBERG EBOOK {title} ***', '',
            'Updated editions will replace the previous one', '']
  return newline.join(lines)


# 2,400 words (w, wb, wc, ..., wbaa, ...: digits spelled a-j): 3 lines.
LONG = ' '.join('w' + ''.join(chr(ord('a') + int(d)) for d in str(n))
                for n in range(2400))


@pytest.fixture
def clone(tmp_path):
  """Alpha (3 books), Beta (2), Gamma (2): 4 books kept and one of each
  reason to skip."""
  root = tmp_path / 'Gutenberg_Text'
  files = {
      'README.txt': 'not a book',
      '.git/info/a.txt': book('Git', ['not an author']),
      'Alpha, A/Cove.txt': book('Cove', ['Cove text; it ends.'],
                                newline='\r\n'),
      'Alpha, A/A first.txt': book('First', [
          'Produced by Someone|and the Online Proofreading Team',
          'Alpha one, first|paragraph.', 'Second paragraph of alpha: 2!']),
      'Alpha, A/notes.html': book('Notes', ['not a book either']),
      'Beta, B/Bees.txt': book('Bees', ['Bees BUZZ']),
      'Beta, B/Le Livre.txt': book('Livre', ['Un livre'], language='French'),
      'Gamma, G/Gnu.txt': book('Gnu', ['one', 'two', 'three', 'four',
                                       'five', 'Transcribed by hand', LONG]),
      'Gamma, G/Goat.txt': book('Goat', ['no start line'], start=False),
  }
  # A copy of Bees, later in the order than Bees itself.
  files['Alpha, A/Bees again.txt'] = files['Beta, B/Bees.txt']
  for path, text in files.items():
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_bytes(text.encode('utf-8'))
  return root


def built_lines(clone, tmp_path, tokens):
  out = tmp_path / 'text.txt'
  built = gutenberg_text.build(str(clone), str(out), tokens)
  return built, out.read_text(encoding='utf-8').splitlines()


LONG_LINES = [' '.join(LONG.split()[:1000]), ' '.join(LONG.split()[1000:2000]),
              ' '.join(LONG.split()[2000:])]


def test_books_are_taken_round_robin_over_authors_and_stripped(clone,
                                                               tmp_path):
  built, lines = built_lines(clone, tmp_path, 10**6)
  assert lines == [
      'alpha one first paragraph', 'second paragraph of alpha',  # A first
      'bees buzz',  # Bees
      'one', 'two', 'three', 'four', 'five', 'transcribed by hand',  # Gnu
      *LONG_LINES,
      # Alpha's Bees again (a copy), Beta's Le Livre (French) and Gamma's
      # Goat (no START line) are skipped.
      'cove text it ends',  # Cove
  ]
  assert (built.tokens, built.lines, built.books) == (2422, 13, 4)
  assert built.skipped == {gutenberg_text.DUPLICATE: 1,
                           gutenberg_text.NOT_ENGLISH: 1,
                           gutenberg_text.NO_START: 1}


def test_the_text_stops_after_the_line_that_reaches_the_tokens(clone,
                                                                tmp_path):
  built, lines = built_lines(clone, tmp_path, 9)
  assert lines == ['alpha one first paragraph', 'second paragraph of alpha',
                   'bees buzz']
  assert (built.tokens, built.books) == (10, 2)
  built, lines = built_lines(clone, tmp_path, 1010)
  assert lines[-1] == LONG_LINES[0]
  assert (built.tokens, built.books, sum(built.skipped.values())) == (
      1018, 3, 0)


def test_bad_arguments_fail_in_one_line_and_write_nothing(clone, tmp_path):
  out = tmp_path / 'text.txt'
  with pytest.raises(ValueError, match='--clone .*missing: not a directory'):
    gutenberg_text.build(str(tmp_path / 'missing'), str(out), 10)
  with pytest.raises(ValueError, match='no <Author>/<Title>.txt books'):
    gutenberg_text.build(str(clone / 'Alpha, A'), str(out), 10)
  for path in clone.glob('*/*.txt'):
    if path.name not in ('Goat.txt', 'Le Livre.txt'):
      path.unlink()
  with pytest.raises(ValueError, match='no English Project Gutenberg book '
                     'with a START line'):
    gutenberg_text.build(str(clone), str(out), 10)
  with pytest.raises(ValueError, match='--out .*: folder .* does not exist'):
    gutenberg_text.build(str(clone), str(tmp_path / 'no' / 'text.txt'), 10)
  with pytest.raises(ValueError, match='--tokens 0: must be at least 1'):
    gutenberg_text.build(str(clone), str(out), 0)
  assert sorted(p.name for p in tmp_path.iterdir()) == ['Gutenberg_Text']


def test_the_command_prints_what_it_wrote(clone, tmp_path, capsys):
  out = tmp_path / 'text.txt'
  gutenberg_text.main(['--clone', str(clone), '--out', str(out)])
  assert capsys.readouterr().out == (
      f'{out}: 2,422 tokens, 13 lines, 4 books used; skipped: 1 duplicate, '
      '1 no START line, 1 not English\n')
  with pytest.raises(SystemExit):
    gutenberg_text.main(['--clone', str(tmp_path / 'missing'), '--out',
                         str(out)])
  assert 'not a directory' in capsys.readouterr().err
