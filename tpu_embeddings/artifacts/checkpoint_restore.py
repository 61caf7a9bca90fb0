"""Restores a Model artifact's checkpoint on CPU with `TPUEmbeddingForServing`.

Shared by the validator and the exporter. The restore is checked against the
spec before any variable is built: every table must be in the checkpoint with
its spec shape, and the checkpoint may hold no table the spec does not name.
"""

import dataclasses
import re
from typing import Any, Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.spec import embedding_variables
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

_TABLE_KEY = re.compile(r'^embedding/([^/.]+)/\.ATTRIBUTES/VARIABLE_VALUE$')


class CheckpointError(ValueError):
  """The checkpoint does not match the spec, or cannot be read."""


@dataclasses.dataclass
class RestoredModel:
  spec: EmbeddingSpec
  vocabulary: Optional[vocabulary_file.TokenCounts]
  checkpoint_path: str
  embedding: Any  # TPUEmbeddingForServing, built, optimizer=None

  def table(self, name: str) -> tf.Variable:
    return embedding_variables.parameters(self.embedding, name)

  def table_numpy(self, name: str) -> np.ndarray:
    """The table's values without a copy (a read-only view of the variable's
    buffer: `Variable.numpy()` would copy a multi-GB table)."""
    view = np.asarray(self.table(name).value())
    view.flags.writeable = False
    return view


def checkpoint_shapes(checkpoint_path: str) -> Dict[str, Any]:
  """`{key: shape}` of a checkpoint, with a clear error if it cannot be read."""
  try:
    return dict(tf.train.list_variables(checkpoint_path))
  except (tf.errors.OpError, ValueError) as e:
    raise CheckpointError(
        f'checkpoint {checkpoint_path} cannot be read ({type(e).__name__}: '
        f'{str(e).splitlines()[0]})') from e


def check_tables(spec: EmbeddingSpec, checkpoint_path: str,
                 sparsecore: bool = False):
  """Raises CheckpointError naming the table for any missing/extra/mis-shaped
  one."""
  shapes = checkpoint_shapes(checkpoint_path)
  found = {m.group(1): shapes[k] for k in shapes
           if (m := _TABLE_KEY.match(k))}
  expected = {t.name: [t.vocabulary_size, t.dim] for t in spec.tables}
  for name, want in expected.items():
    if name not in found:
      raise CheckpointError(
          f'checkpoint {checkpoint_path}: table {name!r} (shape {want}) is '
          f'missing; tables in the checkpoint: {sorted(found) or "none"}')
    got = list(found[name])
    # SparseCore layouts pad rows; they may be larger but never smaller.
    ok = (got == want if not sparsecore else
          len(got) == 2 and got[0] >= want[0] and got[1] >= want[1])
    if not ok:
      raise CheckpointError(
          f'checkpoint {checkpoint_path}: table {name!r} has shape {got} but '
          f'the spec says {want}')
  extra = sorted(set(found) - set(expected))
  if extra:
    raise CheckpointError(
        f'checkpoint {checkpoint_path}: table(s) {extra} are not in the '
        f'spec (spec tables: {sorted(expected)})')


def restore_for_serving(
    model_uri: str,
    checkpoint_path: Optional[str] = None,
    sparsecore_restore_info: Optional[Dict[str, Any]] = None,
    read_vocabulary: bool = True,
    tables: Optional[Sequence[str]] = None
) -> RestoredModel:
  """Restores tables only (optimizer=None: no slot variable is created).

  `read_vocabulary=False` leaves `vocabulary` None and skips its size check,
  for callers that stream vocabulary.tsv themselves (a multi-million-token
  vocabulary as Python strings costs about as much memory as its table).
  `tables`: restore just these (every table is still checked); the restored
  spec then holds only them.
  """
  spec = EmbeddingSpec.load(model_uri)
  vocab = vocabulary_file.read(model_uri) if read_vocabulary else None
  path = checkpoint_path or model_layout.latest_checkpoint(model_uri)
  check_tables(spec, path, sparsecore=sparsecore_restore_info is not None)
  if tables is not None:
    spec = spec.only_tables(tables)
  if tf.distribute.has_strategy() and 'TPU' in type(
      tf.distribute.get_strategy()).__name__:
    raise CheckpointError('restore for serving must run outside TPUStrategy')
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), optimizer=None,
      experimental_sparsecore_restore_info=sparsecore_restore_info)
  restore_objects(path, embedding, check_matched=True)
  if vocab is not None:
    check_vocabulary_size(model_uri, spec, len(vocab))
  return RestoredModel(spec, vocab, path, embedding)


def restore_objects(path: str, embedding, model=None,
                    check_matched: bool = False):
  """Restores `embedding` (built here) and `model` as the trainer saved them
  (`tf.train.Checkpoint(embedding=, model=)`); returns the restore status,
  optimizer slots left unread. `check_matched`: every object built so far
  must have been restored. CheckpointError on any failure."""
  objects = {model_layout.EMBEDDING_KEY: embedding}
  if model is not None:
    objects[model_layout.MODEL_KEY] = model
  try:
    # Restore before build(): SparseCore layouts are only read this way.
    status = tf.train.Checkpoint(**objects).restore(path)
    # Optimizer slots are never read; marked at once, so that a stop during
    # build() deletes the restore without TensorFlow's unrestored-values
    # warnings.
    status.expect_partial()
    embedding.build()
    if check_matched:
      status.assert_existing_objects_matched()
  # A truncated file raises IndexError ("Read less bytes than requested").
  except (tf.errors.OpError, AssertionError, ValueError, IndexError) as e:
    raise CheckpointError(
        f'checkpoint {path}: restore failed ({type(e).__name__}: '
        f'{str(e).splitlines()[0]})') from e
  return status


def check_vocabulary_size(model_uri: str, spec: EmbeddingSpec, tokens: int):
  """CheckpointError unless every table of `spec` has a row per token."""
  for t in spec.tables:
    if tokens != t.vocabulary_size:
      raise CheckpointError(
          f'model {model_uri}: vocabulary has {tokens} tokens but table '
          f'{t.name!r} has {t.vocabulary_size} rows')
