"""The size rules the code keeps: small modules and short functions.

No module over 300 lines and no function over 60 lines, in the library, the
components, the pipelines and the tests (benchmark scripts are exempt: each
is one measurement written out in full).
"""

import ast
import os

from tests.support import paths

MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60
CHECKED = ('tpu_embeddings', 'components', 'pipelines', 'tests')


def _python_files():
  for top in CHECKED:
    for root, dirs, files in os.walk(os.path.join(paths.REPO, top)):
      dirs[:] = [d for d in dirs if d != '__pycache__']
      for name in files:
        if name.endswith('.py'):
          yield os.path.join(root, name)


def test_modules_and_functions_are_short():
  too_long = []
  for path in _python_files():
    with open(path, encoding='utf-8') as f:
      source = f.read()
    rel = os.path.relpath(path, paths.REPO)
    lines = source.count('\n')
    if lines > MAX_MODULE_LINES:
      too_long.append(f'{rel}: {lines} lines')
    for node in ast.walk(ast.parse(source)):
      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        length = node.end_lineno - node.lineno + 1
        if length > MAX_FUNCTION_LINES:
          too_long.append(f'{rel}:{node.lineno} {node.name}(): {length} lines')
  assert not too_long, '\n'.join(too_long)
