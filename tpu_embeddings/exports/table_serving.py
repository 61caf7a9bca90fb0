"""The serving SavedModel: a TF2 SavedModel in TF Serving layout.

    <export_dir>/saved_model.pb
    <export_dir>/variables/              the table, its row norms, the
                                         vocabulary's sorted fingerprints
                                         (`token_ids.SortedKeys`) and its
                                         line ends
    <export_dir>/assets/vocabulary.txt   one token per line, line i = table
                                         row i

Signatures (names and keys from `tpu_embeddings.artifacts.serving_contract`;
all lookups go through the vocabulary asset; an OOV token, including "", maps
to id -1 and to a zero vector):

* `serving_default`: `sentences` [batch] string -> `embeddings` [batch, dim],
  tokens split with `tpu_embeddings.core.text.tf_tokenize` and combined with
  sqrtn: sum of the token vectors / sqrt(number of tokens). OOV tokens add zero
  to the sum but count in the denominator, as in the Hub module (whose OOV
  bucket rows are zeros); a sentence without tokens gives zeros.
* `lookup`: `tokens` [n] string -> `embeddings` [n, dim].
* `neighbors`: `tokens` [n] string, `k` scalar int32 -> `tokens` [n, k'] string
  and `scores` [n, k'] float32, the k' = min(k, vocabulary size - 1) rows with
  the highest cosine similarity, the query token itself excluded. An OOV query
  has no direction: its row is "" with score 0.

Every signature reads the table densely (never ResourceGather), so a loaded
table is never switched to copy-on-read and is held once. The vocabulary's
resources (`tpu_embeddings.artifacts.vocabulary_resources`) are named, so the
signatures answer under session loaders (TF Serving, `saved_model_cli run`) as
under `tf.saved_model.load`.

It is also a TF2 reusable SavedModel, for `hub.KerasLayer(export_dir,
trainable=True)`: calling the loaded object, `obj(sentences)`, gives the
`serving_default` embeddings as a [batch, dim] tensor and is differentiable
with respect to the table; `obj.variables` holds the table, its row norms,
the vocabulary's line ends and the token lookup's two arrays,
`obj.trainable_variables` the table, and
`obj.regularization_losses` is empty.
Fine-tuning does not update the row norms that `neighbors` divides by.

`assets.extra/tf_serving_warmup_requests` holds one warm-up request per
signature (`tpu_embeddings.exports.warmup`).
"""

import os
import tempfile
from typing import Optional

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import token_ids
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.artifacts import vocabulary_resources
from tpu_embeddings.artifacts.checkpoint_restore import RestoredModel
from tpu_embeddings.core import text
from tpu_embeddings.exports import warmup

# Name of the table variable inside the SavedModel (its checkpoint key is
# `<TABLE_ATTRIBUTE>/.ATTRIBUTES/VARIABLE_VALUE` in variables/).
TABLE_ATTRIBUTE = 'embeddings'
NORMS_ATTRIBUTE = 'row_norms'
# Vocabulary tokens (the file's first lines) used by the warm-up requests.
_WARMUP_TOKENS = 3
# Rows per step when computing row norms: a multi-GB table needs no
# table-sized temporary.
_NORM_CHUNK_ROWS = 1 << 16
# Inputs of the signatures.
_SENTENCES = tf.TensorSpec([None], tf.string, name=serving_contract.SENTENCES)
_TOKENS = tf.TensorSpec([None], tf.string, name=serving_contract.TOKENS)
_K = tf.TensorSpec([], tf.int32, name=serving_contract.K)


def table_checkpoint_key() -> str:
  """Key of the exported table in `<export_dir>/variables/variables`."""
  return f'{TABLE_ATTRIBUTE}/.ATTRIBUTES/VARIABLE_VALUE'


def _row_norms(table: tf.Variable) -> np.ndarray:
  rows = int(table.shape[0])
  norms = np.empty([rows], np.float32)
  block_norms = tf.function(lambda block: tf.norm(block, axis=1),
                            autograph=False)
  for start in range(0, rows, _NORM_CHUNK_ROWS):
    stop = min(rows, start + _NORM_CHUNK_ROWS)
    norms[start:stop] = block_norms(table[start:stop]).numpy()
  return norms


class EmbeddingServingModule(tf.Module):
  """The exported object: a table, its vocabulary and three signatures.

  The signatures hold no Python control flow on tensors, so they are traced
  without AutoGraph.
  """

  # Reusable SavedModel attributes: saved as plain attributes, which
  # tf.Module's properties of the same names are not.
  variables = None
  trainable_variables = None
  regularization_losses = None

  def __init__(self, table: tf.Variable, vocabulary_path: str,
               token_keys: Optional[token_ids.SortedKeys]):
    """`token_keys`: the vocabulary's; None keys its lookup by the token
    strings (`vocabulary_resources.TokenIds`)."""
    super().__init__(name=None)
    if table.shape.rank != 2:
      raise ValueError(f'serving export: table must be 2-D, got {table.shape}')
    self.vocabulary_size = int(table.shape[0])
    self.dim = int(table.shape[1])
    # The restored variable itself (no copy): a multi-GB table is held once.
    setattr(self, TABLE_ATTRIBUTE, table)
    setattr(self, NORMS_ATTRIBUTE,
            tf.Variable(_row_norms(table), trainable=False, name='row_norms'))
    self.vocabulary_asset = tf.saved_model.Asset(vocabulary_path)
    self.token_ids = vocabulary_resources.TokenIds(
        self.vocabulary_asset, self.vocabulary_size, token_keys)
    self.tokens_by_id = vocabulary_resources.TokenStrings(
        self.vocabulary_asset, vocabulary_resources.line_ends(vocabulary_path))
    self.variables = [table, getattr(self, NORMS_ATTRIBUTE),
                      self.tokens_by_id.line_ends
                      ] + self.token_ids.lookup_variables
    self.trainable_variables = [table]
    self.regularization_losses = []

  @property
  def table(self) -> tf.Variable:
    return getattr(self, TABLE_ATTRIBUTE)

  def _rows(self, ids):
    """Table rows `ids`: a dense read of the table, then a gather.

    Never `tf.gather` on the variable itself (ResourceGather): a sparse read
    puts the variable in copy-on-read mode, after which every dense read (the
    matmul of `neighbors`) copies the whole table.
    """
    return tf.gather(self.table.value(), ids)

  def _embed(self, sentences):
    tokens = text.tf_tokenize(sentences)
    ids, known = self.token_ids.lookup(tokens.flat_values)
    # OOV tokens go to segment -1, which the sum drops; they still count in n.
    sums = tf.math.unsorted_segment_sum(
        self._rows(ids), tf.where(known, tokens.value_rowids(), -1),
        tokens.nrows())
    counts = tf.cast(tokens.row_lengths(), sums.dtype)[:, tf.newaxis]
    sums = tf.ensure_shape(sums, [None, self.dim])
    return tf.math.divide_no_nan(sums, tf.sqrt(counts))

  @tf.function(input_signature=[_SENTENCES], autograph=False)
  def __call__(self, sentences):
    """[batch] sentences -> [batch, dim]: the reusable SavedModel's call."""
    return self._embed(sentences)

  @tf.function(input_signature=[_SENTENCES], autograph=False)
  def embed_sentences(self, sentences):
    return {serving_contract.EMBEDDINGS: self._embed(sentences)}

  @tf.function(input_signature=[_TOKENS], autograph=False)
  def lookup(self, tokens):
    ids, known = self.token_ids.lookup(tokens)
    rows = self._rows(ids)
    # Zeroing OOV rows is a pass over the result: only batches with an OOV
    # token pay it.
    vectors = tf.cond(
        tf.reduce_all(known), lambda: rows,
        lambda: rows * tf.cast(known, rows.dtype)[:, tf.newaxis])
    return {serving_contract.EMBEDDINGS: vectors}

  @tf.function(input_signature=[_TOKENS, _K], autograph=False)
  def neighbors(self, tokens, k):
    tf.debugging.assert_positive(k, message='neighbors: k must be >= 1')
    ids, known = self.token_ids.lookup(tokens)
    norms = getattr(self, NORMS_ATTRIBUTE)
    query = tf.math.l2_normalize(self._rows(ids), axis=1)
    scores = tf.math.divide_no_nan(
        tf.matmul(query, self.table.value(), transpose_b=True),
        norms[tf.newaxis, :])
    k = tf.minimum(k, self.vocabulary_size - 1)
    # Take k + 1 and drop the query token itself wherever it ranks; a row
    # where it is not among them drops its last instead.
    top = tf.math.top_k(scores, k=k + 1)
    keep = tf.not_equal(top.indices, tf.cast(ids, tf.int32)[:, tf.newaxis])
    keep &= tf.cumsum(tf.cast(keep, tf.int32), axis=1) <= k
    shape = [tf.shape(tokens)[0], k]
    indices = tf.reshape(tf.boolean_mask(top.indices, keep), shape)
    values = tf.reshape(tf.boolean_mask(top.values, keep), shape)
    found = tf.broadcast_to(known[:, tf.newaxis], shape)
    return {
        serving_contract.TOKENS: tf.where(
            found, self.tokens_by_id.gather(indices), ''),
        serving_contract.SCORES: tf.where(found, values, 0.0),
    }

  def signatures(self):
    """{signature: its tf.function}, as `tf.saved_model.save` takes them.

    Not concrete functions: the save traces each function once, in its save
    context, and a trace from outside that context would be traced again
    inside it (the variable policy is part of a trace's key).
    """
    return {
        serving_contract.SERVING_DEFAULT: self.embed_sentences,
        serving_contract.LOOKUP: self.lookup,
        serving_contract.NEIGHBORS: self.neighbors,
    }


def _first_tokens(tokens_path: str) -> list:
  block = next(vocabulary_file.line_blocks(tokens_path, 1 << 16))
  return block.decode('utf-8').split('\n')[:-1][:_WARMUP_TOKENS]


def export_serving_model(restored: RestoredModel, export_dir: str,
                         table: str = '', tokens_path: str = '',
                         token_keys: Optional[token_ids.SortedKeys] = None,
                         keyed_by_string: bool = False) -> None:
  """Writes the serving SavedModel for one table of `restored` to `export_dir`.

  Args:
    restored: from
      `tpu_embeddings.artifacts.checkpoint_restore.restore_for_serving`
      (optimizer=None, so no slot variable exists to be exported).
    export_dir: must not exist yet, or be an empty directory.
    table: table to export; default the spec's first (and, for skip-gram, only)
      table, whose rows are the vocabulary's lines.
    tokens_path: a one-token-per-line file (`vocabulary_file.write_tokens` /
      `write_tokens_asset` format) shipped as the vocabulary asset; default:
      written from `restored.vocabulary`. With a path, `restored.vocabulary`
      is not used, so a multi-million-token vocabulary need not be in memory.
    token_keys: `token_ids.sorted_keys(tokens_path)`, if already known
      (it costs about 32 bytes per token while it runs); computed when None.
    keyed_by_string: key the token lookup by the token strings, as it is
      anyway when two tokens share a fingerprint (`SortedKeys.collide`).
  """
  name = table or restored.spec.tables[0].name
  if name != restored.spec.tables[0].name:
    raise ValueError(
        f'serving export: table {name!r} has no vocabulary; only '
        f'{restored.spec.tables[0].name!r} (rows = vocabulary.tsv lines) can '
        'be exported')
  if tf.io.gfile.exists(export_dir) and tf.io.gfile.listdir(export_dir):
    raise FileExistsError(
        f'serving export: {export_dir} is not empty; export into a new '
        'directory')
  variable = restored.table(name)
  with tempfile.TemporaryDirectory(prefix='vocabulary-') as staging:
    if not tokens_path:
      tokens_path = os.path.join(staging,
                                 serving_contract.TOKENS_ASSET_FILENAME)
      vocabulary_file.write_tokens(tokens_path, restored.vocabulary)
    tokens = vocabulary_file.count_lines(tokens_path)
    if int(variable.shape[0]) != tokens:
      raise ValueError(
          f'serving export: table {name!r} has {variable.shape[0]} rows but '
          f'the vocabulary has {tokens} tokens')
    module = EmbeddingServingModule(
        variable, tokens_path,
        token_ids.lookup_keys(tokens_path, token_keys, keyed_by_string))
    tf.saved_model.save(module, export_dir, signatures=module.signatures())
    warmup.write(export_dir, warmup.requests_for(_first_tokens(tokens_path)))
