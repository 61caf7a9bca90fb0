"""The two-tower example module run once through the pipeline on CSV spans:
the home its e2e tests read (tests/e2e/test_own_model.py)."""

import contextlib
import io
import pathlib

from components import module_file
from pipelines import demo_interactions
from pipelines.cli.main import main
from tests.support import interaction_fixtures
from tpu_embeddings.models import model_restore
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout

SHAPE = demo_interactions.Shape(items=300, categories=10, sequences=300,
                                min_length=10, max_length=30)
FLAGS = ['--module-file', interaction_fixtures.MODULE_FILE,
         '--set', 'example_gen.format="csv"', '--set', 'batch_size=128',
         '--set', 'epochs=2', '--set', 'regression_margin=0.5']


def edit_line(path: str, number: int, edit) -> bytes:
  """Line `number` (1-based) of a CSV file replaced by edit(line); the new
  line."""
  with open(path, 'rb') as f:
    lines = f.read().split(b'\n')
  lines[number - 1] = edit(lines[number - 1])
  with open(path, 'wb') as f:
    f.write(b'\n'.join(lines))
  return lines[number - 1]


def run(root: pathlib.Path) -> dict:
  """`run` on span 1 under `root`, one training record without its user;
  what it printed, the pushed version 1 and the model restored from it."""
  written = demo_interactions.write_examples(str(root / 'data'), SHAPE,
                                             span=1)
  # One training record without its user: an empty id, counted and warned.
  edit_line(written['train'], 5, lambda line: line[line.index(b','):])
  argv = ['run', '--data', str(root / 'data'), '--home', str(root / 'home')]
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    assert main(argv + FLAGS) == 0
  push_root = str(root / 'home' / 'pushed')
  source = home_paths.resolve(push_layout.read_manifest(
      push_root, 'serving', 1)['source_model'], push_root)
  restored = model_restore.restore(source, module_file.from_model(source))
  serving = restored.serving_model(restored.write_vocabularies(
      str(root / 'vocabularies')))
  return {'root': root, 'data': str(root / 'data'),
          'home': str(root / 'home'), 'out': out.getvalue(),
          'push_root': push_root, 'source': source, 'restored': restored,
          'serving': serving,
          'serving_dir': push_layout.version_dir(push_root, 'serving', 1),
          'hub_dir': push_layout.version_dir(push_root, 'hub', 1)}
