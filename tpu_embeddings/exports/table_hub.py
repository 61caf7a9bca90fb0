"""The TF1 Hub module: `hub.create_module_spec` + `hub.add_signature` +
`export`.

    <export_dir>/tfhub_module.pb
    <export_dir>/saved_model.pb          one meta graph per tag set: {} and
                                         {"train"}
    <export_dir>/variables/              `embeddings` [V, dim],
                                         `oov_embeddings` [B, dim],
                                         `token_keys`, `token_values` [V]
    <export_dir>/assets/vocabulary.txt   one token per line, line i = table
                                         row i

Signatures (the common text-embedding signature, as in the TF1 Hub text
modules):

* `default`: `sentences` [None] string -> `default` [None, dim] float32, tokens
  split with `tpu_embeddings.core.text.tf_tokenize`, combined with sqrtn; OOV
  tokens map to `num_oov_buckets` bucket rows that are zeros (they add nothing
  to the sum but count in sqrt(n), exactly as in the serving SavedModel); a
  sentence without tokens gives zeros.
* `tokens`: `tokens` [None] string -> `default` [None, dim].

Ids 0..V-1 are the vocabulary rows (`embeddings`), ids V..V+B-1 the OOV bucket
rows (`oov_embeddings`, kept in their own variable so that `embeddings` has
exactly the checkpoint's shape and is restored straight from it). A token's
row is found in the vocabulary's sorted fingerprints (`token_keys`,
`token_values`: `token_ids.SortedKeys`, never trainable), restored with the
table, so a load builds no table of its own. An OOV token's bucket is
Fingerprint64(token) % B (`tf.strings.to_hash_bucket_fast`), as in
`StaticVocabularyTable`.

Fine-tuning follows the TF1 Hub publishing advice: the `{"train"}` tag set makes
both variables trainable and puts an L2 loss on them into
`REGULARIZATION_LOSSES`, which `hub.Module(..., trainable=True, tags={"train"})`
hands to the consumer's `tf.compat.v1.losses.get_regularization_losses()`.
Optimizer-side strengths (FTRL / proximal l1/l2) are never exported. The default
tag set is inference only: nothing is trainable and there is no loss.

The table is never a GraphDef constant: the module's variable is initialized by
its Saver's restore op from `variables/`, which is written
straight from the table (`TableRows`: a restored variable, or a
checkpoint's tensor), without a session: tables over 2 GB export, the
process holds one copy of the table, and a restored table is written from
memory without being read again.
"""

import dataclasses
import functools
from typing import Optional, Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import token_ids
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.core import text

EMBEDDINGS_VARIABLE = 'embeddings'
OOV_VARIABLE = 'oov_embeddings'
TOKEN_KEYS_VARIABLE = 'token_keys'
TOKEN_VALUES_VARIABLE = 'token_values'
TRAIN_TAGS = frozenset({'train'})
DEFAULT_NUM_OOV_BUCKETS = 1
DEFAULT_L2_REGULARIZATION = 1e-6


@dataclasses.dataclass(frozen=True)
class TableRows:
  """Where the module's table comes from: a 2-D float32 tensor of a
  checkpoint, or a 2-D float32 variable held in memory."""
  checkpoint_prefix: str = ''
  key: str = ''
  variable: Optional[tf.Variable] = None

  @classmethod
  def from_checkpoint(cls, checkpoint_prefix: str, key: str) -> 'TableRows':
    """Tensor `key` of a checkpoint, e.g. a trainer checkpoint's table."""
    return cls(checkpoint_prefix=checkpoint_prefix, key=key)

  @classmethod
  def from_variable(cls, variable: tf.Variable) -> 'TableRows':
    """A restored table, e.g. `RestoredModel.table(name)`: written from
    memory, never read again."""
    return cls(variable=variable)

  def shape(self) -> Tuple[int, int]:
    """(rows, dim); ValueError unless a 2-D float32 table."""
    if self.variable is not None:
      what = f'variable {self.variable.name} is no 2-D float32 table'
      shape, dtype = self.variable.shape.as_list(), self.variable.dtype
    else:
      what = (f'checkpoint {self.checkpoint_prefix} has no 2-D float32 '
              f'tensor {self.key!r}')
      reader = tf.train.load_checkpoint(self.checkpoint_prefix)
      shape = reader.get_variable_to_shape_map().get(self.key, [])
      dtype = reader.get_variable_to_dtype_map().get(self.key)
    if len(shape) != 2 or dtype != tf.float32:
      raise ValueError(f'hub export: {what}')
    return int(shape[0]), int(shape[1])

  def value(self) -> tf.Tensor:
    """The table (a variable's dense read, no copy of it)."""
    if self.variable is not None:
      return self.variable.value()
    return tf.raw_ops.RestoreV2(
        prefix=self.checkpoint_prefix, tensor_names=[self.key],
        shape_and_slices=[''], dtypes=[tf.float32])[0]


def _token_id_lookup(vocabulary_path: str, vocabulary_size: int,
                     num_oov_buckets: int, keyed_by_string: bool):
  """In the module's graph: tokens -> ids, V.. for OOV (hashed into buckets).

  Ids come from the vocabulary's sorted fingerprints, two variables
  restored with the table (`tpu_embeddings.artifacts.token_ids`, as in the
  serving SavedModel), unless `keyed_by_string`: then from a table keyed by
  the token strings, built from the asset at load, for vocabularies in
  which two tokens share a fingerprint. Either way an OOV token goes to
  bucket Fingerprint64(token) % num_oov_buckets.
  """
  if keyed_by_string:
    table = tf.compat.v1.lookup.StaticVocabularyTable(
        tf.compat.v1.lookup.TextFileInitializer(
            vocabulary_path, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
            tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER,
            vocab_size=vocabulary_size),
        num_oov_buckets=num_oov_buckets)
    return table.lookup
  # Registered as an asset: hub copies the file into the module (consumers
  # read the tokens from it) and points this constant at the copy.
  asset = tf.constant(vocabulary_path, name='vocabulary_asset')
  tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS, asset)
  sorted_keys, values = (
      tf.compat.v1.get_variable(
          name, shape=[vocabulary_size], dtype=tf.int64,
          initializer=tf.compat.v1.zeros_initializer(), trainable=False,
          use_resource=False)
      for name in (TOKEN_KEYS_VARIABLE, TOKEN_VALUES_VARIABLE))

  def lookup(tokens):
    ids, known = token_ids.find(sorted_keys, values, tokens)
    buckets = tf.strings.to_hash_bucket_fast(tokens, num_oov_buckets)
    return tf.where(known, ids, vocabulary_size + buckets)

  return lookup


def make_module_spec(vocabulary_path: str, vocabulary_size: int, dim: int,
                     num_oov_buckets: int = DEFAULT_NUM_OOV_BUCKETS,
                     l2_regularization: float = DEFAULT_L2_REGULARIZATION,
                     keyed_by_string: bool = False):
  """The `hub.ModuleSpec`: tag sets {} (inference) and {"train"} (fine-tuning).
  """
  import tensorflow_hub as hub

  def module_fn(is_training):
    # Reference variables: restored and saved in place (no copy of the table).
    table = tf.compat.v1.get_variable(
        EMBEDDINGS_VARIABLE, shape=[vocabulary_size, dim], dtype=tf.float32,
        initializer=tf.compat.v1.zeros_initializer(), trainable=is_training,
        use_resource=False)
    oov = tf.compat.v1.get_variable(
        OOV_VARIABLE, shape=[num_oov_buckets, dim], dtype=tf.float32,
        initializer=tf.compat.v1.zeros_initializer(), trainable=is_training,
        use_resource=False)
    if is_training and l2_regularization > 0:
      tf.compat.v1.add_to_collection(
          tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES,
          tf.multiply(l2_regularization,
                      tf.nn.l2_loss(table) + tf.nn.l2_loss(oov),
                      name='embeddings_l2_loss'))
    lookup_ids = _token_id_lookup(vocabulary_path, vocabulary_size,
                                  num_oov_buckets, keyed_by_string)

    def vectors(ids):
      known = ids < vocabulary_size
      rows = tf.gather(table, tf.where(known, ids, tf.zeros_like(ids)))
      buckets = tf.gather(oov, tf.where(known, tf.zeros_like(ids),
                                        ids - vocabulary_size))
      return tf.where(known[:, tf.newaxis], rows, buckets)

    sentences = tf.compat.v1.placeholder(tf.string, [None],
                                         name=serving_contract.SENTENCES)
    tokens = text.tf_tokenize(sentences)
    sums = tf.math.unsorted_segment_sum(
        vectors(lookup_ids(tokens.flat_values)),
        tokens.value_rowids(), tokens.nrows())
    counts = tf.cast(tokens.row_lengths(), tf.float32)[:, tf.newaxis]
    # sqrtn; rows without tokens come out as zeros.
    sentence_embeddings = tf.math.divide_no_nan(sums, tf.sqrt(counts))
    sentence_embeddings.set_shape([None, dim])
    hub.add_signature(serving_contract.HUB_DEFAULT,
                      {serving_contract.SENTENCES: sentences},
                      {serving_contract.HUB_OUTPUT: sentence_embeddings})

    token_input = tf.compat.v1.placeholder(tf.string, [None],
                                           name=serving_contract.TOKENS)
    token_embeddings = vectors(lookup_ids(token_input))
    token_embeddings.set_shape([None, dim])
    hub.add_signature(serving_contract.HUB_TOKENS,
                      {serving_contract.TOKENS: token_input},
                      {serving_contract.HUB_OUTPUT: token_embeddings})

  return hub.create_module_spec(
      module_fn,
      tags_and_args=[(set(), {'is_training': False}),
                     (set(TRAIN_TAGS), {'is_training': True})])


def _check_arguments(num_oov_buckets: int, l2_regularization: float,
                     export_dir: str):
  if isinstance(num_oov_buckets, bool) or not isinstance(
      num_oov_buckets, int) or num_oov_buckets < 1:
    raise ValueError(
        f'hub export: num_oov_buckets must be an integer >= 1, got '
        f'{num_oov_buckets!r}')
  if not np.isfinite(l2_regularization) or l2_regularization < 0:
    raise ValueError(
        f'hub export: l2_regularization must be a finite number >= 0, got '
        f'{l2_regularization!r}')
  if tf.io.gfile.exists(export_dir):
    raise FileExistsError(
        f'hub export: {export_dir} already exists; export into a new path')


def _table_shape(rows: TableRows, tokens_path: str):
  """(vocabulary size, dim) of the table, checked against the token file."""
  vocabulary_size, dim = rows.shape()
  tokens = vocabulary_file.count_lines(tokens_path)
  if vocabulary_size != tokens:
    raise ValueError(
        f'hub export: table has {vocabulary_size} rows but the vocabulary has '
        f'{tokens} tokens')
  return vocabulary_size, dim


def export_hub_module(rows: TableRows,
                      tokens_path: str,
                      export_dir: str,
                      num_oov_buckets: int = DEFAULT_NUM_OOV_BUCKETS,
                      l2_regularization: float = DEFAULT_L2_REGULARIZATION,
                      token_keys: Optional[token_ids.SortedKeys] = None,
                      keyed_by_string: bool = False) -> None:
  """Writes the TF1 Hub module for the table `rows` (row i = token i).

  Args:
    rows: `TableRows.from_variable(restored table)`, or
      `TableRows.from_checkpoint(prefix, key)`, e.g. a trainer checkpoint
      and `model_layout.table_key(name)`.
    tokens_path: a one-token-per-line file in row order
      (`vocabulary_file.write_tokens` / `write_tokens_asset` format), shipped
      as the module's asset under its own file name (normally
      `serving_contract.TOKENS_ASSET_FILENAME`).
    export_dir: must not exist (hub's `export` refuses an existing directory).
    num_oov_buckets: zero rows for OOV tokens (>= 1).
    l2_regularization: strength of the L2 loss of the {"train"} tag set (>= 0).
    token_keys: `token_ids.sorted_keys(tokens_path)`, if already known;
      computed when None.
    keyed_by_string: key the token lookup by the token strings, as it is
      anyway when two tokens share a fingerprint (`SortedKeys.collide`).
  """
  _check_arguments(num_oov_buckets, l2_regularization, export_dir)
  vocabulary_size, dim = _table_shape(rows, tokens_path)
  token_keys = token_ids.lookup_keys(tokens_path, token_keys,
                                     keyed_by_string)
  spec = make_module_spec(tokens_path, vocabulary_size, dim, num_oov_buckets,
                          float(l2_regularization), token_keys is None)
  # hub's `ModuleSpec.export(path, checkpoint_path)` and `Module.export`
  # load the table into a session to save it again; `_export` (which both
  # end in) takes the writer of the variables checkpoint instead.
  spec._export(export_dir, functools.partial(
      _write_variables, rows, num_oov_buckets, token_keys))


def _write_variables(rows: TableRows, num_oov_buckets: int,
                     token_keys: Optional[token_ids.SortedKeys], prefix: str):
  """The module's variables checkpoint at `prefix`, as its TF1 Saver names
  them: the table straight from `rows`, the OOV rows zeros, and the token
  lookup's arrays, if any."""
  table = rows.value()
  tensors = {EMBEDDINGS_VARIABLE: table,
             OOV_VARIABLE: tf.zeros([num_oov_buckets, table.shape[1]],
                                    tf.float32)}
  if token_keys is not None:
    in_variables = token_keys.in_variables()
    tensors[TOKEN_KEYS_VARIABLE] = in_variables.keys.value()
    tensors[TOKEN_VALUES_VARIABLE] = in_variables.values.value()
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=list(tensors),
                    shape_and_slices=[''] * len(tensors),
                    tensors=list(tensors.values()))
