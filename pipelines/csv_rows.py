"""The first row of a span's CSV files that CsvExampleGen cannot read.

CsvExampleGen stops on such a row with a message naming neither the file
nor the line (a row with an extra field gives "new-line character seen in
unquoted field"). When it fails, the local runner reads the files it read
the way it reads them and names the row: one record per line, a record
going on over the next lines while its double quotes are unbalanced, blank
lines skipped, the first line of every file its header, and every file of a
split with the same header. Nothing is read when CsvExampleGen succeeds.
"""

import csv
import io
from typing import Iterator, List, Optional, Sequence, Tuple


def _fields(text: str) -> List[str]:
  rows = list(csv.reader(io.StringIO(text)))
  return rows[0] if rows else []


def _plain(error: csv.Error) -> str:
  """Python's csv message (which CsvExampleGen shows) in plain words."""
  if 'new-line character' in str(error):
    return 'a line break (\\r or \\n) inside an unquoted field'
  return f'not CSV ({error})'


def _records(f) -> Iterator[Tuple[int, Optional[bytes]]]:
  """(first line number, record) of the lines after the header; the record
  is None when its quote is never closed."""
  start, lines, quotes = 0, [], 0
  for number, line in enumerate(f, 2):
    if not lines:
      start = number
    lines.append(line)
    quotes += line.count(b'"')
    if quotes % 2 == 0:
      yield start, b''.join(lines)
      lines, quotes = [], 0
  if lines:
    yield start, None


def _file_problem(path: str, header: Optional[List[str]]
                  ) -> Tuple[Optional[str], List[str]]:
  """(the file's first problem or None, its header)."""
  with open(path, 'rb') as f:
    first = f.readline()
    try:
      own = _fields(first.decode('utf-8').rstrip('\r\n'))
    except UnicodeDecodeError:
      return f'{path} line 1: not UTF-8 text', []
    if not own:
      return f'{path}: no header row (the first line names the columns)', []
    if header is not None and own != header:
      return (f'{path} line 1: header {",".join(own)} differs from the '
              f'split\'s other files ({",".join(header)}); give every file '
              'of a split the same header'), own
    for start, record in _records(f):
      if record is None:
        return (f'{path} line {start}: a double quote opened here is never '
                'closed; close or remove it'), own
      try:
        text = record.decode('utf-8').rstrip('\r\n')
      except UnicodeDecodeError:
        return f'{path} line {start}: not UTF-8 text', own
      if not text.strip():
        continue
      try:
        fields = _fields(text)
      except csv.Error as e:
        return f'{path} line {start}: {_plain(e)}; fix the row', own
      if len(fields) != len(own):
        return (f'{path} line {start}: {len(fields)} fields where the header '
                f'has {len(own)} ({",".join(own)}); fix the row, or quote a '
                'field that holds a comma'), own
  return None, own


def first_problem(splits: Sequence[Sequence[str]]) -> Optional[str]:
  """'<file> line <n>: what is wrong; how to fix it' for the first bad row
  of the CSV files of each split (lists of paths), or None."""
  for files in splits:
    header = None
    for path in files:
      problem, own = _file_problem(path, header)
      if problem:
        return problem
      header = own
  return None
