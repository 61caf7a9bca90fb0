"""The serving SavedModel: a TF2 SavedModel in TF Serving layout.

    <export_dir>/saved_model.pb
    <export_dir>/variables/               the table and its row norms, nothing else
    <export_dir>/assets/vocabulary.txt    one token per line, line i = table row i

Signatures (all lookups go through the vocabulary asset; an OOV token, including
"", maps to id -1 and to a zero vector):

* `serving_default`: `sentences` [batch] string -> `embeddings` [batch, dim],
  tokens split with `components.text.tf_tokenize` and combined with sqrtn:
  sum of the token vectors / sqrt(number of tokens). OOV tokens add zero to the
  sum but count in the denominator, as in the Hub module (whose OOV bucket rows
  are zeros); a sentence without tokens gives zeros.
* `lookup`: `tokens` [n] string -> `embeddings` [n, dim].
* `neighbors`: `tokens` [n] string, `k` scalar int32 -> `tokens` [n, k'] string
  and `scores` [n, k'] float32, the k' = min(k, vocabulary size - 1) rows with
  the highest cosine similarity, the query token itself excluded. An OOV query
  has no direction: its row is "" with score 0.
"""

import gc
import os
import tempfile

import numpy as np
import tensorflow as tf

from components import text
from components import vocabulary_file
from components.checkpoint_restore import RestoredModel

# Name of the table variable inside the SavedModel (its checkpoint key is
# `<TABLE_ATTRIBUTE>/.ATTRIBUTES/VARIABLE_VALUE` in variables/).
TABLE_ATTRIBUTE = 'embeddings'
NORMS_ATTRIBUTE = 'row_norms'
SIGNATURES = ('serving_default', 'lookup', 'neighbors')
# Rows per step when computing row norms, so a multi-GB table needs no
# table-sized temporary.
_NORM_CHUNK_ROWS = 1 << 18


def table_checkpoint_key() -> str:
  """Key of the exported table in `<export_dir>/variables/variables`."""
  return f'{TABLE_ATTRIBUTE}/.ATTRIBUTES/VARIABLE_VALUE'


def _row_norms(table: tf.Variable) -> np.ndarray:
  rows = int(table.shape[0])
  norms = np.empty([rows], np.float32)
  for start in range(0, rows, _NORM_CHUNK_ROWS):
    stop = min(rows, start + _NORM_CHUNK_ROWS)
    norms[start:stop] = tf.norm(table[start:stop], axis=1).numpy()
  return norms


class EmbeddingServingModule(tf.Module):
  """The exported object: a table, its vocabulary and three signatures."""

  def __init__(self, table: tf.Variable, vocabulary_path: str):
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
    self.token_ids = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(
            self.vocabulary_asset, tf.string,
            tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER,
            vocab_size=self.vocabulary_size),
        default_value=vocabulary_file.OOV_ID)
    self.tokens_by_id = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(
            self.vocabulary_asset, tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER, tf.string,
            tf.lookup.TextFileIndex.WHOLE_LINE,
            vocab_size=self.vocabulary_size),
        default_value='')

  @property
  def table(self) -> tf.Variable:
    return getattr(self, TABLE_ATTRIBUTE)

  def _ids_and_vectors(self, tokens):
    ids = self.token_ids.lookup(tokens)
    known = ids >= 0
    vectors = tf.gather(self.table, tf.where(known, ids, tf.zeros_like(ids)))
    vectors = tf.where(known[:, tf.newaxis], vectors, tf.zeros_like(vectors))
    return ids, vectors

  @tf.function(input_signature=[
      tf.TensorSpec([None], tf.string, name='sentences')])
  def embed_sentences(self, sentences):
    tokens = text.tf_tokenize(sentences)
    _, vectors = self._ids_and_vectors(tokens.flat_values)
    sums = tf.reduce_sum(
        tf.RaggedTensor.from_row_splits(vectors, tokens.row_splits), axis=1)
    counts = tf.cast(tokens.row_lengths(), sums.dtype)[:, tf.newaxis]
    sums = tf.ensure_shape(sums, [None, self.dim])
    return {'embeddings': tf.math.divide_no_nan(sums, tf.sqrt(counts))}

  @tf.function(input_signature=[
      tf.TensorSpec([None], tf.string, name='tokens')])
  def lookup(self, tokens):
    _, vectors = self._ids_and_vectors(tokens)
    return {'embeddings': vectors}

  @tf.function(input_signature=[
      tf.TensorSpec([None], tf.string, name='tokens'),
      tf.TensorSpec([], tf.int32, name='k')])
  def neighbors(self, tokens, k):
    tf.debugging.assert_positive(k, message='neighbors: k must be >= 1')
    ids, vectors = self._ids_and_vectors(tokens)
    norms = getattr(self, NORMS_ATTRIBUTE)
    query = tf.math.l2_normalize(vectors, axis=1)
    scores = tf.math.divide_no_nan(
        tf.matmul(query, self.table, transpose_b=True), norms[tf.newaxis, :])
    # Exclude the query token itself.
    known = ids >= 0
    self_mask = tf.one_hot(tf.where(known, ids, tf.zeros_like(ids)),
                           self.vocabulary_size, on_value=True,
                           off_value=False) & known[:, tf.newaxis]
    scores = tf.where(self_mask, tf.fill(tf.shape(scores), -np.inf), scores)
    k = tf.minimum(k, max(self.vocabulary_size - 1, 1))
    top = tf.math.top_k(scores, k=k)
    found = tf.broadcast_to(known[:, tf.newaxis], tf.shape(top.indices))
    return {
        'tokens': tf.where(found, self.tokens_by_id.lookup(
            tf.cast(top.indices, tf.int64)), ''),
        'scores': tf.where(found, top.values, 0.0),
    }

  def signatures(self):
    return {
        'serving_default': self.embed_sentences.get_concrete_function(),
        'lookup': self.lookup.get_concrete_function(),
        'neighbors': self.neighbors.get_concrete_function(),
    }


def export_serving_model(restored: RestoredModel, export_dir: str,
                         table: str = '') -> None:
  """Writes the serving SavedModel for one table of `restored` to `export_dir`.

  Args:
    restored: from `components.checkpoint_restore.restore_for_serving`
      (optimizer=None, so no slot variable exists to be exported).
    export_dir: must not exist yet, or be an empty directory.
    table: table to export; default the spec's first (and, for skip-gram, only)
      table, whose rows are the vocabulary's lines.
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
  if int(variable.shape[0]) != len(restored.vocabulary):
    raise ValueError(
        f'serving export: table {name!r} has {variable.shape[0]} rows but the '
        f'vocabulary has {len(restored.vocabulary)} tokens')
  with tempfile.TemporaryDirectory(prefix='vocabulary-') as staging:
    vocab_path = os.path.join(staging, vocabulary_file.TOKENS_ASSET_FILENAME)
    vocabulary_file.write_tokens(vocab_path, restored.vocabulary)
    module = EmbeddingServingModule(variable, vocab_path)
    tf.saved_model.save(module, export_dir, signatures=module.signatures())
  # The module's lookup tables hold every token twice; free them now rather
  # than whenever the cyclic garbage collector next runs.
  del module
  gc.collect()
