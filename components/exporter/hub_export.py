"""The TF1 Hub module: `hub.create_module_spec` + `hub.add_signature` + `export`.

    <export_dir>/tfhub_module.pb
    <export_dir>/saved_model.pb            one meta graph per tag set: {} and {"train"}
    <export_dir>/variables/                the table (vocabulary rows + OOV bucket rows)
    <export_dir>/assets/vocabulary.txt     one token per line, line i = table row i

Signatures (the common text-embedding signature, as in the TF1 Hub text
modules):

* `default`: `sentences` [None] string -> `default` [None, dim] float32, tokens
  split with `components.text.tf_tokenize`, combined with sqrtn; OOV tokens map
  to `num_oov_buckets` extra rows that are zeros (they add nothing to the sum but
  count in sqrt(n), exactly as in the serving SavedModel); a sentence without
  tokens gives zeros.
* `tokens`: `tokens` [None] string -> `default` [None, dim].

Fine-tuning follows the TF1 Hub publishing advice: the `{"train"}` tag set makes
the table trainable and puts an L2 loss on it into `REGULARIZATION_LOSSES`, which
`hub.Module(..., trainable=True, tags={"train"})` hands to the consumer's
`tf.compat.v1.losses.get_regularization_losses()`. Optimizer-side strengths
(FTRL / proximal l1/l2) are never exported. The default tag set is inference
only: the table is not trainable and carries no loss.

The table is never a GraphDef constant: the module's variable starts as zeros
and is filled through a placeholder, a block of rows at a time, so tables over
2 GB export and the exporting process holds one copy of the table plus a block.
"""

import dataclasses
import os
import tempfile
from typing import Callable, Tuple

import numpy as np
import tensorflow as tf

from components import text
from components import vocabulary_file

EMBEDDINGS_VARIABLE = 'embeddings'
TRAIN_TAGS = frozenset({'train'})
SIGNATURES = ('default', 'tokens')
DEFAULT_NUM_OOV_BUCKETS = 1
DEFAULT_L2_REGULARIZATION = 1e-6
# Rows per fill step (64 MiB for dim 64).
FILL_BLOCK_ROWS = 1 << 18


@dataclasses.dataclass(frozen=True)
class TableRows:
  """Where the exported rows come from: a shape and a block reader."""
  shape: Tuple[int, int]
  read: Callable[[int, int], np.ndarray]  # (start, stop) -> [stop-start, dim]

  @classmethod
  def from_variable(cls, variable: tf.Variable) -> 'TableRows':
    """Blocks of an (eager) variable, e.g. `RestoredModel.table(name)`."""
    return cls((int(variable.shape[0]), int(variable.shape[1])),
               lambda start, stop: variable[start:stop].numpy())

  @classmethod
  def from_checkpoint(cls, checkpoint_prefix: str, key: str) -> 'TableRows':
    """Blocks of one checkpoint tensor, read slice by slice (never whole)."""
    shapes = dict(tf.train.list_variables(checkpoint_prefix))
    if key not in shapes or len(shapes[key]) != 2:
      raise ValueError(
          f'hub export: checkpoint {checkpoint_prefix} has no 2-D tensor '
          f'{key!r}')
    rows, dim = (int(d) for d in shapes[key])

    def read(start, stop):
      spec = f'{rows} {dim} {start},{stop - start}:-'
      return tf.raw_ops.RestoreV2(
          prefix=checkpoint_prefix, tensor_names=[key],
          shape_and_slices=[spec], dtypes=[tf.float32])[0].numpy()

    return cls((rows, dim), read)


def make_module_spec(vocabulary_path: str, vocabulary_size: int, dim: int,
                     num_oov_buckets: int = DEFAULT_NUM_OOV_BUCKETS,
                     l2_regularization: float = DEFAULT_L2_REGULARIZATION):
  """The `hub.ModuleSpec`: tag sets {} (inference) and {"train"} (fine-tuning)."""
  import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top

  def module_fn(is_training):
    table = tf.compat.v1.get_variable(
        EMBEDDINGS_VARIABLE, shape=[vocabulary_size + num_oov_buckets, dim],
        dtype=tf.float32, initializer=tf.compat.v1.zeros_initializer(),
        trainable=is_training)
    if is_training and l2_regularization > 0:
      tf.compat.v1.add_to_collection(
          tf.compat.v1.GraphKeys.REGULARIZATION_LOSSES,
          tf.multiply(l2_regularization, tf.nn.l2_loss(table),
                      name='embeddings_l2_loss'))
    token_ids = tf.compat.v1.lookup.StaticVocabularyTable(
        tf.compat.v1.lookup.TextFileInitializer(
            vocabulary_path, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE,
            tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER,
            vocab_size=vocabulary_size),
        num_oov_buckets=num_oov_buckets)

    sentences = tf.compat.v1.placeholder(tf.string, [None], name='sentences')
    tokens = text.tf_tokenize(sentences).to_sparse()
    sparse_ids = tf.SparseTensor(tokens.indices,
                                 token_ids.lookup(tokens.values),
                                 tokens.dense_shape)
    # Rows without tokens come out as zeros.
    sentence_embeddings = tf.nn.safe_embedding_lookup_sparse(
        table, sparse_ids, combiner='sqrtn')
    sentence_embeddings.set_shape([None, dim])
    hub.add_signature('default', {'sentences': sentences},
                      {'default': sentence_embeddings})

    token_input = tf.compat.v1.placeholder(tf.string, [None], name='tokens')
    token_embeddings = tf.nn.embedding_lookup(table,
                                              token_ids.lookup(token_input))
    token_embeddings.set_shape([None, dim])
    hub.add_signature('tokens', {'tokens': token_input},
                      {'default': token_embeddings})

  return hub.create_module_spec(
      module_fn,
      tags_and_args=[(set(), {'is_training': False}),
                     (set(TRAIN_TAGS), {'is_training': True})])


def export_hub_module(rows: TableRows,
                      vocabulary: vocabulary_file.Vocabulary,
                      export_dir: str,
                      num_oov_buckets: int = DEFAULT_NUM_OOV_BUCKETS,
                      l2_regularization: float = DEFAULT_L2_REGULARIZATION,
                      block_rows: int = FILL_BLOCK_ROWS) -> None:
  """Writes the TF1 Hub module for `rows` (row i = vocabulary token i).

  Args:
    rows: the table, e.g. `TableRows.from_variable(restored.table('tokens'))`
      for a `restore_for_serving` result (optimizer=None, so no slots).
    vocabulary: tokens in row order.
    export_dir: must not exist (hub's `export` refuses an existing directory).
    num_oov_buckets: zero rows appended for OOV tokens (>= 1).
    l2_regularization: strength of the L2 loss of the {"train"} tag set (>= 0).
    block_rows: rows fed per step while filling the table.
  """
  import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
  vocabulary_size, dim = rows.shape
  if vocabulary_size != len(vocabulary):
    raise ValueError(
        f'hub export: table has {vocabulary_size} rows but the vocabulary has '
        f'{len(vocabulary)} tokens')
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

  with tempfile.TemporaryDirectory(prefix='vocabulary-') as staging:
    vocab_path = os.path.join(staging, vocabulary_file.TOKENS_ASSET_FILENAME)
    vocabulary_file.write_tokens(vocab_path, vocabulary)
    spec = make_module_spec(vocab_path, vocabulary_size, dim, num_oov_buckets,
                            float(l2_regularization))
    graph = tf.Graph()
    with graph.as_default():
      module = hub.Module(spec)
      table = module.variable_map[EMBEDDINGS_VARIABLE]
      start = tf.compat.v1.placeholder(tf.int64, [], name='fill_start')
      block = tf.compat.v1.placeholder(tf.float32, [None, dim],
                                       name='fill_rows')
      fill = tf.compat.v1.scatter_update(
          table, tf.range(start, start + tf.shape(block, out_type=tf.int64)[0]),
          block).op
      # Zeros everywhere: the OOV bucket rows stay zero.
      init = tf.compat.v1.global_variables_initializer()
    # Not `with Session()`: that would make `graph` the default graph while
    # the reader runs eager ops on the restored table.
    session = tf.compat.v1.Session(graph=graph)
    try:
      session.run(init)
      for first in range(0, vocabulary_size, block_rows):
        last = min(vocabulary_size, first + block_rows)
        values = np.asarray(rows.read(first, last), np.float32)
        if values.shape != (last - first, dim):
          raise ValueError(
              f'hub export: rows {first}:{last} have shape {values.shape}, '
              f'expected {(last - first, dim)}')
        session.run(fill, feed_dict={start: first, block: values})
      with graph.as_default():
        module.export(export_dir, session)
    finally:
      session.close()
