"""The serving SavedModel's vocabulary: token -> row and row -> token.

`TokenIds` maps a token to its table row, from the vocabulary's sorted
fingerprints saved as variables; `TokenStrings` a row to its token, cut
from the vocabulary asset (one token per line, line i = row i), read whole
at load time, at line ends saved as a variable. Every resource is named
(`_shared_name`), so the signatures answer under session loaders (TF
Serving, `saved_model_cli run`) as under `tf.saved_model.load`.
"""

import uuid
from typing import List, Optional

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import token_ids
from tpu_embeddings.artifacts import vocabulary_file


def _shared_name(kind: str) -> str:
  """A resource name unique to one export.

  Session loaders (TF Serving, `saved_model_cli run`, the C++ loader) run the
  init op once, then each request as a separate `Session.run` of the same
  graph: a resource the requests find again must be named. Anonymous
  resources (AnonymousHashTable, anonymous VarHandleOp) would be created anew,
  empty, by every request. The uuid keeps two exports loaded in one process
  apart; two loads of the same export share the resource, which both
  initialize with the same contents.
  """
  return f'{kind}_{uuid.uuid4().hex}'


def _file_of(asset: tf.saved_model.Asset) -> str:
  """The asset's file, to name in an error (known only eagerly, as every
  export here builds its module)."""
  if tf.executing_eagerly():
    return asset.asset_path.numpy().decode('utf-8', 'replace')
  return 'the vocabulary asset'


class TokenIds(tf.Module):
  """Token -> row id (`tpu_embeddings.artifacts.token_ids`).

  Given the vocabulary's `token_ids.SortedKeys`, they are two variables of
  the SavedModel: a load restores them with the table and builds nothing.
  Without them (`sorted_keys=None`, for vocabularies in which two tokens
  share a fingerprint), a plain table keyed by the token strings is built
  from the asset at load time (`StringTokenIds`).
  """

  def __init__(self, vocabulary_asset: tf.saved_model.Asset,
               vocabulary_size: int,
               sorted_keys: Optional[token_ids.SortedKeys]):
    super().__init__(name=None)
    if vocabulary_size > token_ids.MAX_TOKENS:
      raise ValueError(
          f'serving export: vocabulary {_file_of(vocabulary_asset)} has '
          f'{vocabulary_size} tokens; at most {token_ids.MAX_TOKENS} fit the '
          'token id table')
    if sorted_keys is None:
      self.by_string = StringTokenIds(vocabulary_asset, vocabulary_size)
      return
    if tuple(sorted_keys.keys.shape) != (vocabulary_size,):
      raise ValueError(
          f'serving export: vocabulary {_file_of(vocabulary_asset)}: '
          f'{sorted_keys.keys.shape[0]} token keys for {vocabulary_size} '
          'tokens')
    self.by_string = None
    in_variables = sorted_keys.in_variables()
    self.token_keys = in_variables.keys
    self.token_values = in_variables.values

  @property
  def lookup_variables(self) -> List[tf.Variable]:
    """The variables a lookup reads (none for a string-keyed table)."""
    return ([] if self.by_string is not None else
            [self.token_keys, self.token_values])

  def initialize_now(self):
    """Makes lookups answer in this process before the model is saved (a
    loaded SavedModel initializes its table itself)."""
    if self.by_string is not None:
      self.by_string.initialize_now()

  def lookup(self, tokens):
    """`(ids, known)`: ids in [0, vocabulary size) (0 for OOV), OOV mask."""
    if self.by_string is not None:
      return self.by_string.lookup(tokens)
    # Dense reads: a gather on the variable itself (ResourceGather) would
    # switch it to copy-on-read, after which every search copies it.
    return token_ids.find(self.token_keys.value(),
                          self.token_values.value(), tokens)


class StringTokenIds(tf.saved_model.experimental.TrackableResource):
  """Token -> row id in a table keyed by the token strings, built from the
  asset at load time: the fallback for vocabularies in which two tokens
  share a fingerprint."""

  def __init__(self, vocabulary_asset: tf.saved_model.Asset,
               vocabulary_size: int):
    super().__init__()
    self._vocabulary_asset = vocabulary_asset
    self._vocabulary_size = vocabulary_size
    self._name = _shared_name('token_ids')
    _create_now(self)

  def _create_resource(self):
    return tf.raw_ops.HashTableV2(key_dtype=tf.string, value_dtype=tf.int64,
                                  shared_name=self._name)

  def _initialize(self):
    return tf.raw_ops.InitializeTableV2(
        table_handle=self.resource_handle,
        keys=token_ids.read_lines(self._vocabulary_asset,
                                  self._vocabulary_size),
        values=tf.range(self._vocabulary_size, dtype=tf.int64))

  def initialize_now(self):
    """Fills the table in this process."""
    with tf.init_scope():
      self._initialize()

  def lookup(self, tokens):
    """`(ids, known)`, as `TokenIds.lookup`."""
    found = tf.raw_ops.LookupTableFindV2(
        table_handle=self.resource_handle, keys=tokens,
        default_value=tf.constant(vocabulary_file.OOV_ID, tf.int64))
    found.set_shape(tokens.shape)
    return tf.maximum(found, 0), found >= 0


def line_ends(tokens_path: str) -> np.ndarray:
  """Where each line of a one-token-per-line file ends: the byte offset of
  its newline (int32, or int64 for files of 2 GiB and more), read in
  blocks."""
  dtype = (np.int32 if tf.io.gfile.stat(tokens_path).length < 2**31 else
           np.int64)
  ends, offset = [], 0
  for block in vocabulary_file.line_blocks(tokens_path):
    ends.append((np.flatnonzero(np.frombuffer(block, np.uint8) == 10) +
                 offset).astype(dtype))
    offset += len(block)
  return np.concatenate(ends) if ends else np.zeros([0], dtype)


class TokenStrings(tf.Module):
  """Row id -> token: the asset's bytes, read whole at load (`AssetBytes`),
  cut at the line ends saved with the export.

  At 10M tokens that is the file (about 9 bytes a token) and 4 bytes a
  token of line ends; a string tensor of the lines held 24 bytes a token,
  and splitting the file to build it about three times that.
  """

  def __init__(self, vocabulary_asset: tf.saved_model.Asset,
               ends: np.ndarray):
    """`ends`: `line_ends` of the asset's file."""
    super().__init__(name=None)
    if not ends.size:
      raise ValueError(f'serving export: vocabulary '
                       f'{_file_of(vocabulary_asset)} has no tokens')
    self.line_ends = tf.Variable(ends, trainable=False,
                                 name='token_line_ends')
    self.asset_bytes = AssetBytes(vocabulary_asset, int(ends[-1]) + 1)

  def gather(self, ids):
    """The tokens of row `ids` (int32 or int64, any shape)."""
    ends = self.line_ends.value()
    ids = tf.cast(ids, ends.dtype)
    stop = tf.gather(ends, ids)
    start = tf.where(ids > 0, tf.gather(ends, tf.maximum(ids - 1, 0)) + 1,
                     tf.zeros_like(ids))
    return tf.strings.substr(self.asset_bytes.value(), start, stop - start)


class AssetBytes(tf.saved_model.experimental.TrackableResource):
  """An asset's bytes as one string, a named variable filled at load; a
  file of another length than the export's fails the load."""

  def __init__(self, asset: tf.saved_model.Asset, size: int):
    super().__init__()
    self._asset = asset
    self._size = size
    self._name = _shared_name('asset_bytes')
    _create_now(self)

  def _create_resource(self):
    return tf.raw_ops.VarHandleOp(dtype=tf.string, shape=[],
                                  shared_name=self._name)

  def _initialize(self):
    content = tf.io.read_file(self._asset)
    with tf.control_dependencies([tf.debugging.assert_equal(
        tf.strings.length(content), self._size,
        message=f'{vocabulary_file.TOKENS_ASSET_FILENAME} is not the '
        f'{self._size} bytes the export was made with')]):
      return tf.raw_ops.AssignVariableOp(resource=self.resource_handle,
                                         value=tf.identity(content))

  def value(self):
    return tf.raw_ops.ReadVariableOp(resource=self.resource_handle,
                                     dtype=tf.string)


def _create_now(resource: tf.saved_model.experimental.TrackableResource):
  """Creates the (empty) resource eagerly, so every signature captures it."""
  with tf.init_scope():
    resource.resource_handle  # noqa: B018
