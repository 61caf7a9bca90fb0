"""pipelines/csv_rows.py: the CSV row CsvExampleGen stops on, by file and
line."""

import pytest

from pipelines import csv_rows

HEADER = b'user_id,history,item_id\r\n'


def _file(tmp_path, name: str, body: bytes) -> str:
  path = tmp_path / name
  path.write_bytes(body)
  return str(path)


def test_well_formed_files_have_no_problem(tmp_path):
  good = _file(tmp_path, 'a.csv', HEADER + b'u1,i1 i2,i3\r\n'
               b'u2,"i1, i2",i3\r\n'       # a quoted comma
               b'\r\n'                      # blank lines are skipped
               b'u3,"i1\ni2",i3\r\n'        # a quoted line break
               b',,i4\r\n')                 # empty cells are values
  other = _file(tmp_path, 'b.csv', HEADER + b'u9,i9,i8\n')
  assert csv_rows.first_problem([[good, other], [other]]) is None


@pytest.mark.parametrize('rows, problem', [
    (b'u1,i1,i2\r\nu2,i1,i2,extra\r\n',
     'line 3: 4 fields where the header has 3 (user_id,history,item_id); fix '
     'the row, or quote a field that holds a comma'),
    (b'u1,i1\r\n', 'line 2: 2 fields where the header has 3'),
    (b'u1,i1,i2\r\nu2,i1,i2\r,extra\n',
     'line 3: a line break (\\r or \\n) inside an unquoted field; fix the '
     'row'),
    (b'u1,i1,i2\r\nu2,"i1,i2\r\nu3,i1,i2\r\n',
     'line 3: a double quote opened here is never closed; close or remove '
     'it'),
    (b'u1,i1,caf\xe9\r\n', 'line 2: not UTF-8 text'),
])
def test_the_first_bad_row_is_named_by_file_and_line(tmp_path, rows,
                                                     problem):
  good = _file(tmp_path, 'a.csv', HEADER + b'u1,i1,i2\r\n')
  bad = _file(tmp_path, 'b.csv', HEADER + rows)
  found = csv_rows.first_problem([[good], [good, bad]])
  assert found.startswith(f'{bad} {problem}'), found


def test_every_file_of_a_split_has_the_split_header(tmp_path):
  first = _file(tmp_path, 'a.csv', HEADER + b'u1,i1,i2\r\n')
  other = _file(tmp_path, 'b.csv', b'user,history,item_id\r\nu1,i1,i2\r\n')
  assert csv_rows.first_problem([[first, other]]) == (
      f'{other} line 1: header user,history,item_id differs from the split\'s '
      'other files (user_id,history,item_id); give every file of a split the '
      'same header')
  assert csv_rows.first_problem([[first], [other]]) is None  # other splits
  empty = _file(tmp_path, 'c.csv', b'')
  assert csv_rows.first_problem([[empty]]) == (
      f'{empty}: no header row (the first line names the columns)')
