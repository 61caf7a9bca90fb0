"""The exports of a model that serves one table as text embeddings.

A module declares the capability with `exported_table(spec) -> (table,
vocabulary)` (the built-in skip-gram does): row i of `table` is token i of
the Model's `vocabulary` (`tpu_embeddings.artifacts.vocabularies`; '' is
the single vocabulary). Then

1. the table alone is restored with `TPUEmbeddingForServing(...,
   optimizer=None)` (tpu_embeddings.artifacts.checkpoint_restore), so no
   slot is ever read; meanwhile, on a second thread, the vocabulary is
   streamed into the token asset (no Python string per token) and its
   fingerprints sorted for both exports' token lookups
   (`token_ids.SortedKeys`);
2. the serving SavedModel (`table_serving`) and the Hub module
   (`table_hub`) are written from the restored table, which is then
   released: the process holds one copy of a multi-GB table, never two, and
   reads it once.

Its canary (`table_canary`) holds the first, middle and last rows.
"""

import concurrent.futures
import os
from typing import Optional

from absl import logging

from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.artifacts import token_ids
from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.exports import staging
from tpu_embeddings.exports import table_canary
from tpu_embeddings.exports import table_hub
from tpu_embeddings.exports import table_serving
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


def _write_token_file(vocabulary_dir: str, tokens_path: str, rows: int):
  """vocabulary.tsv -> the token asset; `(count, known lines, SortedKeys)`.

  Streamed: never a Python string per token (at 10M tokens those would cost
  about half the table's memory); each block's tokens are hashed as they
  are written, and the sorted fingerprints hold 16 bytes per token (32
  while they are sorted).
  """
  keys = token_ids.KeysBuilder(rows)
  with staging.phase('vocabulary asset'):
    count, known = vocabulary_file.write_tokens_asset(
        vocabulary_dir, tokens_path, lines=(0, rows // 2, rows - 1),
        on_block=keys.add)
  if count != rows:
    return count, known, None
  with staging.phase('token keys'):
    return count, known, keys.sorted()


class TableSource:
  """One table of a Model, restored, and written as each export kind.

  Attributes:
    canary: the load check's `table_canary.Canary`.
    table_bytes: bytes of the table, which every export holds.
    writers: {export kind: write(export_dir)}, each called once, in the
      registry's order: the last (the Hub module) releases the restored
      table.
    SELF_CONTAINED: True: its exports are built by this library's code
      alone, of stock TensorFlow ops, so the exporting process checks them
      in graphs of their own as a fresh process would (`export`).
  """
  SELF_CONTAINED = True

  def __init__(self, model_uri: str, spec: EmbeddingSpec, table: str,
               vocabulary: str, scratch_dir: str, num_oov_buckets: int,
               l2_regularization: float):
    """Restores `table` while a second thread writes and checks the token
    asset into `scratch_dir` (TensorFlow and file I/O release the GIL)."""
    rows = spec.table(table).vocabulary_size
    self.table_bytes = rows * spec.table(table).dim * 4
    self._table_name = table
    self._hub_options = {'num_oov_buckets': num_oov_buckets,
                         'l2_regularization': l2_regularization}
    self._tokens_path = os.path.join(scratch_dir,
                                     vocabulary_file.TOKENS_ASSET_FILENAME)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
      token_file = pool.submit(
          _write_token_file, vocabularies.directory_of(model_uri, vocabulary),
          self._tokens_path, rows)
      with staging.phase('restore'):
        restored = checkpoint_restore.restore_for_serving(
            model_uri, read_vocabulary=False, tables=[table])
      count, known, token_keys = token_file.result()
    # Held once, in variables both exports save.
    self._token_keys = (
        token_keys.in_variables()
        if token_keys is not None and not token_keys.collide else token_keys)
    if count != rows:
      raise checkpoint_restore.CheckpointError(
          f'model {model_uri}: vocabulary {vocabulary or "(single)"!r} has '
          f'{count} tokens but table {table!r} has {rows} rows')
    variable = restored.table(table)
    self.canary = table_canary.make_canary(
        table_canary.TokenFile(self._tokens_path, count, known),
        lambda start, stop: variable[start:stop].numpy())
    logging.info('Exporting table %r %s from %s', table, variable.shape,
                 restored.checkpoint_path)
    self._restored: Optional[checkpoint_restore.RestoredModel] = restored
    self.writers = {export_kinds.SERVING.name: self._write_serving,
                    export_kinds.HUB.name: self._write_hub}

  def _restored_model(self):
    if self._restored is None:
      raise ValueError('exports of a table: each kind is written once, in '
                       'the registry order')
    return self._restored

  def _write_serving(self, export_dir: str):
    table_serving.export_serving_model(
        self._restored_model(), export_dir, self._table_name,
        tokens_path=self._tokens_path, token_keys=self._token_keys)

  def _write_hub(self, export_dir: str):
    rows = table_hub.TableRows.from_variable(
        self._restored_model().table(self._table_name))
    table_hub.export_hub_module(
        rows, self._tokens_path, export_dir,
        token_keys=self._token_keys, **self._hub_options)
    self._restored = None  # the caller releases a large table's memory
    self._token_keys = None
