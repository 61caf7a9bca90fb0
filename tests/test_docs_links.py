"""Nothing in the repository points at a document that is not there.

Every relative link in its Markdown files (README.md, docs/, kubeflow/, ...)
leads to a file of the repository, and a `#anchor` to a heading of the
Markdown file it names, by GitHub's rule for heading anchors. Every Markdown
file that code or configuration names (`docs/design.md`,
`kubeflow/README.md`, relative to the repository root) exists, and a section
named beside it (`"Credentials" in kubeflow/README.md`,
`docs/design.md "The stack, and why"`, `"..." section of the README`) is one
of its headings.
"""

import os
import re
from typing import Dict, Iterator, List, Set

from tests.support import paths

# Not the repository's own files: tools' caches, environments, outputs.
SKIPPED_DIRS = {'build', 'demo', 'dist', 'node_modules', '__pycache__'}
CODE_SUFFIXES = ('.py', '.toml', '.in', '.cfg', '.ini', '.cc', '.h', '.sh')
CODE_NAMES = ('Makefile', 'run')  # .ci/run
CODE_PREFIXES = ('Dockerfile',)

_FENCE = re.compile(r'^\s*(```|~~~)')
_HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
_INLINE_CODE = re.compile(r'`[^`\n]*`')
_INLINE_LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
_REFERENCE_LINK = re.compile(r'^\s*\[[^\]]+\]:\s*(\S+)')
_DOC_PATH = re.compile(r'(?<![\w./-])((?:[\w.-]+/)*[\w-][\w.-]*\.md)\b')
_SECTION_BEFORE = re.compile(
    r'"([^"\n]+)"\s+(?:section\s+)?(?:in|of)\s+(?:the\s+)?'
    r'((?:[\w.-]+/)*[\w-][\w.-]*\.md|README)\b')
_SECTION_AFTER = re.compile(
    r'((?:[\w.-]+/)*[\w-][\w.-]*\.md),?\s+"([^"\n]+)"')


def _prose_lines(text: str) -> Iterator[str]:
  """The lines of a Markdown text outside fenced code blocks."""
  fenced = False
  for line in text.splitlines():
    if _FENCE.match(line):
      fenced = not fenced
    elif not fenced:
      yield line


def anchor(heading: str) -> str:
  """GitHub's anchor of a heading: lower case, punctuation dropped, spaces
  made hyphens (`## The stack, and why` -> `the-stack-and-why`)."""
  text = heading.replace('`', '').strip().lower()
  text = re.sub(r'[^\w\- ]', '', text)
  return text.replace(' ', '-')


def anchors(text: str) -> Set[str]:
  """Every heading anchor of a Markdown text, repeats numbered as GitHub
  numbers them (`usage`, `usage-1`, ...)."""
  seen: Dict[str, int] = {}
  found = set()
  for line in _prose_lines(text):
    match = _HEADING.match(line)
    if not match:
      continue
    slug = anchor(match.group(2))
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    found.add(slug if count == 0 else f'{slug}-{count}')
  return found


def links(text: str) -> List[str]:
  """The link targets of a Markdown text, outside code."""
  found = []
  for line in _prose_lines(text):
    line = _INLINE_CODE.sub('', line)
    found.extend(_INLINE_LINK.findall(line))
    found.extend(_REFERENCE_LINK.findall(line))
  return found


def _read(path: str) -> str:
  with open(path, encoding='utf-8') as f:
    return f.read()


def _missing_anchor(path: str, fragment: str) -> bool:
  return (path.endswith('.md') and
          fragment.lower() not in anchors(_read(path)))


def broken_links(markdown_file: str, root: str) -> List[str]:
  """`file: target (why)` for each link of `markdown_file` that leads to no
  file under `root`, or to no heading of the Markdown file it names."""
  broken = []
  rel = os.path.relpath(markdown_file, root)
  for target in links(_read(markdown_file)):
    if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.IGNORECASE):
      continue  # https:, mailto: ...: not a file of the repository
    path, _, fragment = target.partition('#')
    resolved = (os.path.normpath(os.path.join(
        os.path.dirname(markdown_file), path)) if path else markdown_file)
    if os.path.relpath(resolved, root).startswith('..'):
      broken.append(f'{rel}: {target} (outside the repository)')
    elif not os.path.exists(resolved):
      broken.append(f'{rel}: {target} (no such file)')
    elif fragment and _missing_anchor(resolved, fragment):
      broken.append(f'{rel}: {target} (no such heading)')
  return broken


def _section_problem(root: str, name: str, section: str) -> List[str]:
  path = os.path.join(root, 'README.md' if name == 'README' else name)
  if not os.path.exists(path):
    return [f'{name} (no such file)']
  if anchor(section) not in anchors(_read(path)):
    return [f'{name} "{section}" (no such heading)']
  return []


def broken_names(text: str, root: str) -> List[str]:
  """The Markdown files, and sections of them, that `text` names but `root`
  does not hold. Paths are relative to `root`, as code names them."""
  broken = []
  for name in _DOC_PATH.findall(text):
    if not os.path.exists(os.path.join(root, name)):
      broken.append(f'{name} (no such file)')
  # One line of prose from a comment's wrapped lines and from Python's
  # adjacent string literals ('... the "write your ' 'own model" section').
  flat = re.sub(r'\s*\n\s*(?:#\s*)?', ' ', text)
  flat = re.sub(r"(['\"])\s+\1", '', flat)
  for section, name in _SECTION_BEFORE.findall(flat):
    broken.extend(_section_problem(root, name, section))
  for name, section in _SECTION_AFTER.findall(flat):
    broken.extend(_section_problem(root, name, section))
  return broken


def _is_source_dir(name: str) -> bool:
  hidden = name.startswith('.') and name != '.ci'  # .git, .venv, caches
  return not (hidden or name in SKIPPED_DIRS or name.endswith('.egg-info'))


def _files(root: str) -> Iterator[str]:
  for top, dirs, files in os.walk(root):
    dirs[:] = sorted(d for d in dirs if _is_source_dir(d))
    for name in sorted(files):
      yield os.path.join(top, name)


def markdown_files(root: str) -> List[str]:
  return [p for p in _files(root) if p.endswith('.md')]


def code_files(root: str) -> List[str]:
  """Code and configuration files, but this module: its examples of broken
  names below are not references."""
  this = os.path.abspath(__file__)
  return [p for p in _files(root)
          if (p.endswith(CODE_SUFFIXES) or
              os.path.basename(p) in CODE_NAMES or
              os.path.basename(p).startswith(CODE_PREFIXES))
          and os.path.abspath(p) != this]


def test_every_markdown_link_resolves():
  broken = []
  for path in markdown_files(paths.REPO):
    broken.extend(broken_links(path, paths.REPO))
  assert not broken, 'links to nothing:\n' + '\n'.join(broken)


def test_every_document_code_names_exists():
  broken = []
  for path in code_files(paths.REPO):
    rel = os.path.relpath(path, paths.REPO)
    broken.extend(f'{rel}: {b}'
                  for b in broken_names(_read(path), paths.REPO))
  assert not broken, 'named but missing:\n' + '\n'.join(broken)


def test_the_readme_and_docs_are_checked():
  checked = {os.path.relpath(p, paths.REPO)
             for p in markdown_files(paths.REPO)}
  assert 'README.md' in checked
  assert os.path.join('docs', 'design.md') in checked
  code = {os.path.relpath(p, paths.REPO) for p in code_files(paths.REPO)}
  assert os.path.join('pipelines', 'kubeflow', 'resources.py') in code
  assert os.path.join('.ci', 'run') in code
  assert 'Makefile' in code


def _write(root, rel, text):
  path = os.path.join(root, rel)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, 'w', encoding='utf-8') as f:
    f.write(text)
  return path


def test_a_link_to_a_missing_file_or_heading_is_found(tmp_path):
  root = str(tmp_path)
  _write(root, 'docs/guide.md', '# Guide\n\n## The stack, and why\n')
  readme = _write(root, 'README.md', (
      '# Title\n\n'
      '[ok](docs/guide.md#the-stack-and-why) [top](#title)\n'
      '[gone](docs/gone.md) [bad](docs/guide.md#no-such-part)\n'
      '[up](../elsewhere.md) [web](https://example.com/x.md)\n'
      '`[code](docs/in-code.md)`\n\n'
      '```\n[fenced](docs/fenced.md)\n# not a heading\n```\n'))
  assert broken_links(readme, root) == [
      'README.md: docs/gone.md (no such file)',
      'README.md: docs/guide.md#no-such-part (no such heading)',
      'README.md: ../elsewhere.md (outside the repository)',
  ]


def test_a_missing_document_named_in_code_is_found(tmp_path):
  root = str(tmp_path)
  _write(root, 'README.md', '# Title\n\n## Write your own model\n')
  _write(root, 'docs/design.md', '# Design\n\n## The stack, and why\n')
  code = (
      '# Pins and their reasons: docs/design.md "The stack, and why".\n'
      '# See docs/scale.md and DESIGN.md; the "Write your own\n'
      '# model" section of the README; "Credentials" in the README;\n'
      'HINT = (\'see the "write your \'\n'
      '        \'own model" section of the README\')\n'
      '# docs/design.md, "Defaults".\n')
  assert broken_names(code, root) == [
      'docs/scale.md (no such file)',
      'DESIGN.md (no such file)',
      'README "Credentials" (no such heading)',
      'docs/design.md "Defaults" (no such heading)',
  ]
  assert anchors('# A\n## A\n## `selftest` (TPU)\n') == {
      'a', 'a-1', 'selftest-tpu'}
