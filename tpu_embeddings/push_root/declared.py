"""What a pushed serving model declares: its signatures and their inputs.

Consumers call a loaded SavedModel by what it declares, whatever model
family wrote it: a signature the model lacks is a one-line error naming the
ones it has; each value is fed as the dtype its input declares (strings:
tokens or raw features, a bag's tokens separated by spaces; integers: ids),
and a value of another kind is a one-line error naming the input. A string
input's tokens are checked against the vocabulary the export ships for it,
`assets/<input>.txt`, or the export's one vocabulary when it ships one.
"""

from typing import Dict, List, Mapping, Optional, Sequence, Union

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.core import file_system
from tpu_embeddings.core import text

# Values of one input, one per row; or {input: values} for every input.
Rows = Union[Sequence[str], Mapping[str, Sequence]]

_VOCABULARY_SUFFIX = '.txt'


def signature(model, name: str):
  """The loaded model's signature `name`; a one-line error naming those it
  declares when it has none of that name."""
  found = model.signatures
  if name not in found:
    raise ValueError(f'this model declares no {name!r} signature (it '
                     f'declares: {", ".join(sorted(found)) or "none"})')
  return found[name]


def inputs(function) -> Dict[str, object]:
  """{input name: tf.TensorSpec} of a loaded signature."""
  return dict(function.structured_input_signature[1])


def columns(function, name: str, rows: Rows) -> Dict[str, List]:
  """`rows` as {input: values}: a plain list feeds a signature's one input.
  """
  specs = inputs(function)
  if isinstance(rows, str):
    raise ValueError(f'signature {name!r}: pass a list of values, one per '
                     'row, not one string')
  if not isinstance(rows, Mapping):
    if len(specs) != 1:
      raise ValueError(f'signature {name!r} takes {len(specs)} inputs '
                       f'({", ".join(sorted(specs))}): give the values of '
                       'each by name')
    rows = {next(iter(specs)): rows}
  missing = sorted(set(specs) - set(rows))
  unknown = sorted(set(rows) - set(specs))
  if missing or unknown:
    raise ValueError(
        f'signature {name!r} takes inputs {", ".join(sorted(specs))}'
        + (f'; missing: {", ".join(missing)}' if missing else '')
        + (f'; it has no input {", ".join(unknown)}' if unknown else ''))
  found = {k: list(v) for k, v in rows.items()}
  lengths = {len(v) for v in found.values()}
  if lengths == {0}:
    raise ValueError(f'signature {name!r}: give at least one row')
  if len(lengths) != 1:
    raise ValueError(f'signature {name!r}: every input needs a value per row;'
                     ' got ' + ', '.join(f'{len(v)} of {k}'
                                         for k, v in sorted(found.items())))
  return found


def _number(where: str, spec, value, parse, kind: str):
  if isinstance(value, bool):
    raise ValueError(f'{where} takes {kind}, got {value!r}')
  try:
    return parse(value.strip()) if isinstance(value, str) else parse(value)
  except (TypeError, ValueError, OverflowError):
    raise ValueError(f'{where} takes {kind} ({spec.dtype.name}), got '
                     f'{value!r}') from None


def tensor(name: str, key: str, spec, values: Sequence):
  """`values` as the dtype and shape input `key` of signature `name`
  declares ([None]: one value per row; []: one value)."""
  import tensorflow as tf
  where = f'signature {name!r}: input {key!r}'
  rank = spec.shape.rank
  if rank not in (0, 1):
    raise ValueError(f'{where} takes shape {spec.shape}; only one value per '
                     'row ([None]) or one value ([]) can be given here')
  dtype = spec.dtype
  if dtype == tf.string:
    bad = next((v for v in values if not isinstance(v, (str, bytes))), None)
    if bad is not None:
      raise ValueError(f'{where} takes text (tokens), got {bad!r}')
    found = list(values)
  elif dtype.is_integer:
    found = [_number(where, spec, v, int, 'integer ids') for v in values]
    low, high = dtype.min, dtype.max
    outside = next((v for v in found if not low <= v <= high), None)
    if outside is not None:
      raise ValueError(f'{where} takes integer ids ({dtype.name}: {low} to '
                       f'{high}), got {outside}')
  elif dtype.is_floating:
    found = [_number(where, spec, v, float, 'numbers') for v in values]
  else:
    raise ValueError(f'{where} takes {dtype.name}, which cannot be given '
                     'here')
  if rank == 0:
    if len(found) != 1:
      raise ValueError(f'{where} takes one value, got {len(found)}')
    return tf.constant(found[0], dtype)
  return tf.constant(found, dtype)


def feed(function, name: str, rows: Rows) -> Dict[str, object]:
  """{input: tensor} of `rows` for signature `name`, as it declares them."""
  specs = inputs(function)
  return {k: tensor(name, k, specs[k], v)
          for k, v in columns(function, name, rows).items()}


_NOT_THE_CAUSE = ('Graph execution error', 'Detected at node', '<stack',
                  '[[', 'File ')


def call(function, name: str, feed: Mapping[str, object]):
  """`function(**feed)`; an input the model's ops refuse (e.g. text that
  is not a serialized tf.Example) is one line naming the signature and
  TensorFlow's reason."""
  import tensorflow as tf
  try:
    return function(**feed)
  except tf.errors.InvalidArgumentError as e:
    lines = [line.strip() for line in e.message.splitlines()]
    reason = next((line for line in reversed(lines)
                   if line and not line.startswith(_NOT_THE_CAUSE)),
                  type(e).__name__)
    raise ValueError(f'signature {name!r} refused its input: '
                     f'{reason}') from e


def is_text(spec) -> bool:
  import tensorflow as tf
  return spec.dtype == tf.string


def vocabulary_path(serving_dir: str, input_name: str) -> Optional[str]:
  """The vocabulary the export ships for a string input: its own
  (`assets/<input>.txt`), or the export's only one; None when neither."""
  assets = file_system.join(serving_dir, serving_contract.ASSETS_DIR)
  own = file_system.join(assets, input_name + _VOCABULARY_SUFFIX)
  if file_system.exists(own):
    return own
  shipped = [n for n in (file_system.listdir(assets)
                         if file_system.isdir(assets) else [])
             if n.endswith(_VOCABULARY_SUFFIX)]
  return file_system.join(assets, shipped[0]) if len(shipped) == 1 else None


def unknown_tokens(path: str, values: Sequence[str]) -> List[List[str]]:
  """The tokens of each value (a bag: tokens separated by spaces) that the
  vocabulary file at `path` (one token per line) lacks."""
  tokens = [text.tokenize(v) for v in values]
  wanted = {t.encode('utf-8') for found in tokens for t in found}
  known = set()
  # Streamed: a set of a 10M-token vocabulary would cost about a GiB.
  for block in vocabulary_file.line_blocks(path):
    known |= wanted.intersection(block.split(b'\n'))
  return [[t for t in found if t.encode('utf-8') not in known]
          for found in tokens]
