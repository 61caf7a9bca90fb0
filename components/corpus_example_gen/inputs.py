"""What the corpus ExampleGen agrees to read: plain files inside the data root.

Each path a pattern matches must be a regular file inside the data root: a
folder (a sub-folder in a span folder), a FIFO or a device is refused, and so
is a symlink anywhere below the data root (a `span-1/link.txt` pointing at
/etc/passwd would put its lines in the pushed vocabulary) unless
`example_gen.follow_symlinks` is set. A compressed file is refused, naming
its format and the command that decompresses it, before it is taken for
binary text.
"""

import os
import stat
from typing import Optional

import tensorflow as tf

from components import keys
from tpu_embeddings.core import file_system

# Leading bytes of the compressed formats a corpus file might arrive in.
COMPRESSED = (
    (b'\x1f\x8b', 'gzip', 'gunzip'),
    (b'BZh', 'bzip2', 'bunzip2'),
    (b'\xfd7zXZ\x00', 'xz', 'unxz'),
    (b'\x28\xb5\x2f\xfd', 'zstd', 'unzstd'),
    (b'PK\x03\x04', 'zip', 'unzip'),
    (b'7z\xbc\xaf\x27\x1c', '7z', '7z x'),
)


class InputError(ValueError):
  """A matched path the ExampleGen does not read."""


def compressed(path: str, chunk: bytes) -> Optional[InputError]:
  """An InputError if `chunk` starts like a compressed file."""
  for magic, name, command in COMPRESSED:
    if chunk.startswith(magic):
      return InputError(
          f'corpus ExampleGen: {path} is {name}-compressed; decompress it '
          f'({command}) or move it out of the input: corpus files are plain '
          'UTF-8 text')
  return None


def _has_symlink_below(base: str, path: str) -> bool:
  """True if a component of `path` under `base` is a symlink."""
  rel = os.path.relpath(path, base)
  current = base
  for part in rel.split(os.sep):
    current = os.path.join(current, part)
    if os.path.islink(current):
      return True
  return False


def check_path(input_base: str, path: str, follow_symlinks: bool):
  """Raises InputError unless `path` is a regular file inside the data root
  (module docstring)."""
  if not file_system.is_local(path):
    if tf.io.gfile.isdir(path):
      raise InputError(_folder_message(path))
    return
  base = os.path.abspath(file_system.local_path(input_base))
  local = os.path.abspath(file_system.local_path(path))
  if os.path.relpath(local, base).split(os.sep)[0] == '..':
    raise InputError(f'corpus ExampleGen: {path} is outside the data root '
                     f'{input_base}; set example_gen.pattern to files under it')
  if not follow_symlinks and _has_symlink_below(base, local):
    raise InputError(
        f'corpus ExampleGen: {path} is or passes through a symlink (to '
        f'{os.path.realpath(local)}); replace it by the file itself, or set '
        'example_gen.follow_symlinks=true to read what it points to')
  mode = os.stat(local).st_mode
  if stat.S_ISDIR(mode):
    raise InputError(_folder_message(path))
  if not stat.S_ISREG(mode):
    raise InputError(f'corpus ExampleGen: {path} is not a regular file (a '
                     'pipe, socket or device); move it out of the input')


def _folder_message(path: str) -> str:
  if os.path.basename(path.rstrip('/')) in (keys.TRAIN_SPLIT, keys.EVAL_SPLIT):
    return (f'corpus ExampleGen: {path} is a folder of a pre-split span, '
            'what stock ExampleGens read (e.g. `demo-data --interactions`): '
            'set example_gen.format=csv (or tfrecord); the corpus '
            'ExampleGen reads text files only')
  return (f'corpus ExampleGen: {path} is a folder; a span folder holds only '
          'text files: move its files up, or set example_gen.pattern to '
          'match them (e.g. "span-{SPAN}/*/*")')
