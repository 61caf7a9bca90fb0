"""Where exports are built and how they reach their artifact URIs.

Both exports of a run are built in temporary directories beside their
artifact URIs (names starting with "."), load-checked there, and only then
moved in, so an artifact URI holds a complete export or nothing.
"""

import contextlib
import time

from absl import logging

from tpu_embeddings.core import file_system


def move_into_output(built_dir: str, output_uri: str, subdir: str = ''):
  """Moves a complete export to `output_uri[/subdir]`; the URI may exist, empty.
  """
  if file_system.exists(output_uri):
    if file_system.listdir(output_uri):
      raise FileExistsError(
          f'exporter: output {output_uri} is not empty; give each run a new '
          'output URI')
    if not subdir:
      file_system.remove_tree(output_uri)
  elif subdir:
    file_system.makedirs(output_uri)
  file_system.move_dir(built_dir, file_system.join(output_uri, subdir)
                       if subdir else output_uri)


@contextlib.contextmanager
def phase(name: str):
  """Logs how long a phase of the export took."""
  start = time.perf_counter()
  yield
  logging.info('Export phase %s: %.1f s', name, time.perf_counter() - start)
