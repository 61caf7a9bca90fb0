"""A tokenized text of Project Gutenberg books, for `real_corpora --text`.

    python -m benchmarks.gutenberg_text --clone DIR --out FILE
        [--tokens 12000000]

DIR is a clone of github.com/rcdm-uga/Gutenberg_Text (`<Author>/<Title>.txt`,
each book with Project Gutenberg's header and licence). Books are taken
round-robin over the author folders in name order, each author's books in
path order, until the text holds `--tokens` tokens (it stops after the line
that reaches them). A book is skipped when its bytes repeat an earlier
book's, when its header names a language other than English, or when no
`*** START OF THE PROJECT GUTENBERG` line opens its text in the first
`START_WITHIN` lines. What is kept: the lines between that START line and
the first `*** END OF THE PROJECT GUTENBERG` / `End of the Project
Gutenberg` line, less a "Produced by" credit among the first paragraphs.
Each paragraph (a block of non-blank lines) becomes a line of its lower-cased
`[a-z]+` words, at most `LINE_TOKENS` to a line.
"""

import argparse
import collections
import hashlib
import os
import re
from typing import Iterator, List, Optional, Tuple

START_WITHIN = 800  # lines of a book searched for its START line
HEADER_CHARS = 5000  # characters of a book searched for its Language line
CREDIT_WITHIN = 5  # paragraphs of a book searched for a credit to drop
LINE_TOKENS = 1000

_START = re.compile(r'\*\*\*\s*START OF (THIS|THE) PROJECT GUTENBERG',
                    re.IGNORECASE)
_END = re.compile(r'\*\*\*\s*END OF (THIS|THE) PROJECT GUTENBERG'
                  r'|End of (the )?Project Gutenberg', re.IGNORECASE)
_LANGUAGE = re.compile(r'^Language:\s*(.+)$', re.MULTILINE)
_CREDIT = re.compile(r'produced by|e-text prepared by|transcribed by',
                     re.IGNORECASE)
_WORD = re.compile(r'[a-z]+')

# Why a book was left out; the keys of `Built.skipped`.
DUPLICATE = 'duplicate'
NOT_ENGLISH = 'not English'
NO_START = 'no START line'


class Built:
  """What `write_text` wrote: tokens, lines, books used and skipped."""

  def __init__(self):
    self.tokens = 0
    self.lines = 0
    self.books = 0
    self.skipped = collections.Counter()


def book_order(clone: str) -> List[str]:
  """The books of `clone` (paths of `<Author>/.../<Title>.txt`), round-robin
  over the author folders in name order, each author's in path order; hidden
  folders (.git) are not authors."""
  if not os.path.isdir(clone):
    raise ValueError(f'--clone {clone}: not a directory')
  shelves = []
  for author in sorted(os.listdir(clone)):
    folder = os.path.join(clone, author)
    if os.path.isdir(folder) and not author.startswith('.'):
      books = [os.path.relpath(os.path.join(root, name), folder)
               for root, _, names in os.walk(folder) for name in names
               if name.lower().endswith('.txt')]
      shelves.append([os.path.join(folder, b) for b in sorted(
          books, key=lambda b: b.replace(os.sep, '/'))])
  if not any(shelves):
    raise ValueError(f'--clone {clone}: no <Author>/<Title>.txt books in it')
  order = []
  for turn in range(max(len(s) for s in shelves)):
    order.extend(s[turn] for s in shelves if turn < len(s))
  return order


def body(text: str) -> Tuple[Optional[str], List[str]]:
  """(why the book is skipped or None, the lines between its START and END
  lines)."""
  text = text.replace('\r\n', '\n').replace('\r', '\n')
  language = _LANGUAGE.search(text[:HEADER_CHARS])
  if language and 'english' not in language.group(1).lower():
    return NOT_ENGLISH, []
  lines = text.split('\n')
  start = next((n for n, line in enumerate(lines[:START_WITHIN])
                if _START.match(line.strip())), None)
  if start is None:
    return NO_START, []
  end = next((n for n in range(start + 1, len(lines))
              if _END.match(lines[n].strip())), len(lines))
  return None, lines[start + 1:end]


def paragraphs(lines: List[str]) -> List[str]:
  """Blocks of non-blank lines, each joined by spaces; a credit ("Produced
  by ...") among the first `CREDIT_WITHIN` dropped."""
  blocks, block = [], []
  for line in lines + ['']:
    if line.strip():
      block.append(line.strip())
    elif block:
      blocks.append(' '.join(block))
      block = []
  return [p for n, p in enumerate(blocks)
          if n >= CREDIT_WITHIN or not _CREDIT.match(p)]


def token_lines(lines: List[str]) -> Iterator[List[str]]:
  """The lines of tokens of a book's kept paragraphs (`lines`: its body)."""
  for paragraph in paragraphs(lines):
    words = _WORD.findall(paragraph.lower())
    for at in range(0, len(words), LINE_TOKENS):
      yield words[at:at + LINE_TOKENS]


def write_text(clone: str, out, tokens: int) -> Built:
  """Writes the text of `clone`'s books to the open file `out` until it
  holds `tokens` tokens."""
  built, seen = Built(), set()
  for path in book_order(clone):
    if built.tokens >= tokens:
      break
    with open(path, 'rb') as f:
      data = f.read()
    digest = hashlib.sha256(data).digest()
    if digest in seen:
      built.skipped[DUPLICATE] += 1
      continue
    seen.add(digest)
    reason, lines = body(data.decode('utf-8', 'replace'))
    if reason:
      built.skipped[reason] += 1
      continue
    used = False
    for words in token_lines(lines):
      if built.tokens >= tokens:
        break
      out.write(' '.join(words) + '\n')
      built.tokens += len(words)
      built.lines += 1
      used = True
    built.books += used
  return built


def build(clone: str, out_path: str, tokens: int) -> Built:
  """`write_text` into `out_path`, whole or not at all."""
  if tokens < 1:
    raise ValueError(f'--tokens {tokens}: must be at least 1')
  folder = os.path.dirname(os.path.abspath(out_path))
  if not os.path.isdir(folder):
    raise ValueError(f'--out {out_path}: folder {folder} does not exist')
  partial = out_path + '.partial'
  try:
    with open(partial, 'w', encoding='utf-8') as out:
      built = write_text(clone, out, tokens)
    if not built.lines:
      raise ValueError(f'--clone {clone}: no English Project Gutenberg book '
                       'with a START line in it')
    os.replace(partial, out_path)
  finally:
    if os.path.exists(partial):
      os.remove(partial)
  return built


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--clone', required=True, metavar='DIR',
                      help='a clone of github.com/rcdm-uga/Gutenberg_Text')
  parser.add_argument('--out', required=True, metavar='FILE',
                      help='the text to write: a paragraph a line')
  parser.add_argument('--tokens', type=int, default=12_000_000,
                      help='stop after the line that reaches this many')
  args = parser.parse_args(argv)
  try:
    built = build(args.clone, args.out, args.tokens)
  except ValueError as e:
    parser.error(str(e))
  print(f'{args.out}: {built.tokens:,} tokens, {built.lines:,} lines, '
        f'{built.books} books used; skipped: ' +
        (', '.join(f'{n} {reason}' for reason, n in
                   sorted(built.skipped.items())) or 'none'))


if __name__ == '__main__':
  main()
