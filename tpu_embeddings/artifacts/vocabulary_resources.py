"""The serving SavedModel's vocabulary, as resources built when it is loaded.

`TokenIds` maps a token to its table row, `TokenStrings` a row to its token;
both read the vocabulary asset (one token per line, line i = row i) at load
time, so nothing per token is built while exporting. Every resource is named
(`_shared_name`), so the signatures answer under session loaders (TF Serving,
`saved_model_cli run`) as under `tf.saved_model.load`.
"""

import uuid

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


class TokenIds(tf.saved_model.experimental.TrackableResource):
  """Token -> row id (`tpu_embeddings.artifacts.token_ids`), built at load time.

  Nothing is built while exporting; the table exists only in the process that
  loads the SavedModel. `keyed_by_string=True` (for vocabularies in which two
  tokens share a fingerprint) keys a plain table by the token strings.
  """

  def __init__(self, vocabulary_asset: tf.saved_model.Asset,
               vocabulary_size: int, keyed_by_string: bool = False):
    super().__init__()
    if vocabulary_size > token_ids.MAX_TOKENS:
      raise ValueError(
          f'serving export: {vocabulary_size} tokens; at most '
          f'{token_ids.MAX_TOKENS} fit the token id table')
    self._vocabulary_asset = vocabulary_asset
    self._vocabulary_size = vocabulary_size
    self._keyed_by_string = keyed_by_string
    self._name = _shared_name('token_ids')
    _create_now(self)

  def _create_resource(self):
    return tf.raw_ops.HashTableV2(
        key_dtype=tf.string if self._keyed_by_string else tf.int64,
        value_dtype=tf.int64, shared_name=self._name)

  def _initialize(self):
    tokens = token_ids.read_lines(self._vocabulary_asset,
                                  self._vocabulary_size)
    if self._keyed_by_string:
      keys = tokens
      values = tf.range(self._vocabulary_size, dtype=tf.int64)
    else:
      keys, values = token_ids.keys_and_values(tokens,
                                               self._vocabulary_size)
    return tf.raw_ops.InitializeTableV2(
        table_handle=self.resource_handle, keys=keys, values=values)

  def initialize_now(self):
    """Fills the table in this process, to look tokens up before the model
    is saved (a loaded SavedModel initializes it itself)."""
    with tf.init_scope():
      self._initialize()

  def lookup(self, tokens):
    """`(ids, known)`: ids in [0, vocabulary size) (0 for OOV), OOV mask."""
    if self._keyed_by_string:
      found = tf.raw_ops.LookupTableFindV2(
          table_handle=self.resource_handle, keys=tokens,
          default_value=tf.constant(vocabulary_file.OOV_ID, tf.int64))
      found.set_shape(tokens.shape)
      return tf.maximum(found, 0), found >= 0
    found = tf.raw_ops.LookupTableFindV2(
        table_handle=self.resource_handle, keys=token_ids.keys(tokens),
        default_value=tf.constant(token_ids.MISSING, tf.int64))
    found.set_shape(tokens.shape)
    return token_ids.decode(found, tokens)


class TokenStrings(tf.saved_model.experimental.TrackableResource):
  """Row id -> token: the asset's lines as one string tensor, read at load."""

  def __init__(self, vocabulary_asset: tf.saved_model.Asset,
               vocabulary_size: int):
    super().__init__()
    self._vocabulary_asset = vocabulary_asset
    self._vocabulary_size = vocabulary_size
    self._name = _shared_name('tokens_by_id')
    _create_now(self)

  def _create_resource(self):
    return tf.raw_ops.VarHandleOp(dtype=tf.string,
                                  shape=[self._vocabulary_size],
                                  shared_name=self._name)

  def _initialize(self):
    return tf.raw_ops.AssignVariableOp(
        resource=self.resource_handle,
        value=token_ids.read_lines(self._vocabulary_asset,
                                   self._vocabulary_size))

  def gather(self, ids):
    return tf.raw_ops.ResourceGather(resource=self.resource_handle,
                                     indices=ids, dtype=tf.string)


def _create_now(resource: tf.saved_model.experimental.TrackableResource):
  """Creates the (empty) resource eagerly, so every signature captures it."""
  with tf.init_scope():
    resource.resource_handle  # noqa: B018
