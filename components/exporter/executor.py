"""Executor of `EmbeddingExporter`: checkpoint -> serving SavedModel + Hub
module.

1. restore the trainer's checkpoint with `TPUEmbeddingForServing(...,
   optimizer=None)` (tpu_embeddings.artifacts.checkpoint_restore), so no slot
   is ever read; meanwhile, on a second thread, stream vocabulary.tsv into the
   token asset (no Python string per token) and check its fingerprints;
2. write the serving SavedModel from the restored table (no copy of it);
3. release the restored table and write the Hub module, its table restored
   from the serving export's variables: the process holds one copy of a
   multi-GB table at a time, never two;
4. load each export in a fresh Python process and check it answers canary
   inputs with the checkpoint's values; that process starts first, so its
   TensorFlow import overlaps the export. A table of at most
   `load_check.OVERLAP_MAX_BYTES` is checked while the Hub module is
   written; a larger one after, each export loaded in turn (the Hub module
   in a second fresh process), so the pod holds one copy of the table at a
   time (`export_model`);
5. only then move each into its artifact URI: the SavedModel to
   `<serving_model uri>/Format-Serving/`, where TFX's
   `path_utils.serving_model_path` and the stock Pusher, Evaluator and
   InfraValidator look for it (`serving_contract.serving_model_path`); the Hub
   module to the `hub_module` URI itself.

Both exports are built in temporary directories beside their artifact URIs
(names starting with "."), so an artifact URI holds a complete export or
nothing.
"""

import concurrent.futures
import gc
import os
import shutil
from typing import Any, Dict, List, Optional

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import keys
from components import module_file
from components.exporter import canaries
from components.exporter import fresh_process
from components.exporter import hub_export
from components.exporter import load_check
from components.exporter import model_export
from components.exporter import serving_export
from components.exporter import staging
from components.exporter.config import ExporterConfig
from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import token_ids
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.core import file_system
from tpu_embeddings.core import tf_allocator
from tpu_embeddings.models import skipgram_features
from tpu_embeddings.spec import embedding_spec


def _write_token_file(model_uri: str, tokens_path: str, rows: int):
  """vocabulary.tsv -> the token asset; `(count, known lines, collide)`.

  Streamed: never a Python string per token (at 10M tokens those would cost
  about half the table's memory); the fingerprint check holds 8 bytes per
  token.
  """
  with staging.phase('vocabulary asset'):
    count, known = vocabulary_file.write_tokens_asset(
        model_uri, tokens_path, lines=(0, rows // 2, rows - 1))
  if count != rows:
    return count, known, False
  with staging.phase('fingerprint check'):
    return count, known, token_ids.fingerprints_collide(tokens_path)


def _restore_table(model_uri: str, serving_stage: str, table_name: str,
                   rows: int):
  """(restored, canary, keyed_by_string): the table restored while a second
  thread writes and checks the token asset (TensorFlow and file I/O release
  the GIL)."""
  tokens_path = os.path.join(serving_stage,
                             vocabulary_file.TOKENS_ASSET_FILENAME)
  with concurrent.futures.ThreadPoolExecutor(1) as pool:
    token_file = pool.submit(_write_token_file, model_uri, tokens_path, rows)
    with staging.phase('restore'):
      restored = checkpoint_restore.restore_for_serving(
          model_uri, read_vocabulary=False, tables=[table_name])
    count, known, keyed_by_string = token_file.result()
  if count != rows:
    raise checkpoint_restore.CheckpointError(
        f'model {model_uri}: vocabulary has {count} tokens but table '
        f'{table_name!r} has {rows} rows')
  table = restored.table(table_name)
  canary = canaries.make_canary(
      canaries.TokenFile(tokens_path, count, known),
      lambda start, stop: table[start:stop].numpy())
  logging.info('Exporting table %r %s from %s', table_name, table.shape,
               restored.checkpoint_path)
  return restored, canary, keyed_by_string


def _build_exports(model_uri: str, serving_stage: str, serving_dir: str,
                   hub_dir: str, checkers: List[fresh_process.FreshProcess],
                   num_oov_buckets: int, l2_regularization: float,
                   separate_hub_check: Optional[bool]):
  """Writes both exports and hands each to a load check (`checkers[0]` runs
  already; a second one is started for the Hub module when it is checked in
  its own process)."""
  spec = embedding_spec.EmbeddingSpec.load(model_uri)
  # The input table; a contexts table only scored pairs in training.
  table_name = skipgram_features.skipgram_tables(spec)[0]
  restored, canary, keyed_by_string = _restore_table(
      model_uri, serving_stage, table_name,
      spec.table(table_name).vocabulary_size)
  tokens_path = os.path.join(serving_stage,
                             vocabulary_file.TOKENS_ASSET_FILENAME)
  with staging.phase('serving export'):
    serving_export.export_serving_model(restored, serving_dir, table_name,
                                        tokens_path=tokens_path,
                                        keyed_by_string=keyed_by_string)
  del restored
  gc.collect()
  table = spec.table(table_name)
  # A large table is held once at a time: its checks wait for the export.
  overlap = (table.vocabulary_size * table.dim * 4 <=
             load_check.OVERLAP_MAX_BYTES)
  if overlap:
    checkers[0].submit('serving', serving_dir, canary)
    if separate_hub_check:
      # Started now, so that it imports TensorFlow while the module is
      # written. It loads the module once this process has released the
      # module's table, while the serving check may still be running.
      checkers.append(fresh_process.FreshProcess(checkers[0].timeout))
  with staging.phase('hub export'):
    # The module's table is read back from the serving export's variables.
    hub_export.export_hub_module(
        hub_export.TableRows.from_checkpoint(
            os.path.join(serving_dir, 'variables', 'variables'),
            serving_export.table_checkpoint_key()), tokens_path, hub_dir,
        num_oov_buckets=num_oov_buckets, l2_regularization=l2_regularization,
        keyed_by_string=keyed_by_string)
  tf_allocator.release()
  if not overlap:
    # One export loaded at a time, each check in a process of its own: a
    # loaded SavedModel's vocabulary tables stay until its process ends.
    checkers[0].submit('serving', serving_dir, canary)
    checkers[0].wait()
    checkers[0].close()
    checkers.append(fresh_process.FreshProcess(checkers[0].timeout))
  checkers[-1].submit('hub', hub_dir, canary)


def export_model(model_uri: str,
                 serving_uri: str,
                 hub_uri: str,
                 num_oov_buckets: int = hub_export.DEFAULT_NUM_OOV_BUCKETS,
                 l2_regularization: float = (
                     hub_export.DEFAULT_L2_REGULARIZATION),
                 load_check_timeout_seconds: float = (
                     fresh_process.DEFAULT_TIMEOUT_SECONDS),
                 separate_hub_check: Optional[bool] = None) -> None:
  """Writes both exports of the Model artifact at `model_uri`, load-checked.

  `serving_uri` and `hub_uri` are the output artifacts' URIs; the SavedModel
  lands in `serving_contract.serving_model_path(serving_uri)`.

  Memory: a table of more than `load_check.OVERLAP_MAX_BYTES` is held
  once at a time in the pod: restored and written as the serving export,
  released, read back and written as the Hub module, released; then the
  fresh process loads the serving export (in a session, then with
  `tf.saved_model.load`) and ends, and a second one loads the Hub module.
  Smaller tables overlap the serving check with the Hub export.

  `separate_hub_check`: for a table of at most OVERLAP_MAX_BYTES, load-check
  the Hub module in a second fresh process, overlapping the serving check,
  instead of after it in the same process (default: off).
  """
  stages: List[str] = []
  checkers: List[fresh_process.FreshProcess] = []
  try:
    stages += [file_system.staging_dir(uri, 'exporting')
               for uri in (serving_uri, hub_uri)]
    serving_dir, hub_dir = (os.path.join(stage, 'export')
                            for stage in stages)
    # Imports TensorFlow while this process restores and exports.
    checkers.append(fresh_process.FreshProcess(load_check_timeout_seconds))
    _build_exports(model_uri, stages[0], serving_dir, hub_dir, checkers,
                   num_oov_buckets, l2_regularization, separate_hub_check)
    with staging.phase('load check (rest)'):
      for checker in checkers:
        checker.wait()
    staging.move_into_output(serving_dir, serving_uri,
                             serving_contract.SERVING_MODEL_DIR)
    staging.move_into_output(hub_dir, hub_uri)
  finally:
    for checker in checkers:
      checker.close()
    for path in stages:
      shutil.rmtree(path, ignore_errors=True)


class Executor(base_executor.BaseExecutor):
  """Exports `model` as `serving_model` and `hub_module`, unless the given
  `model_blessing` is not blessed: a module file's model with its own code
  (`model_export`), skip-gram's table as above."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> Optional[Any]:
    self._log_startup(input_dict, output_dict, exec_properties)
    model = artifact_utils.get_single_instance(input_dict[keys.MODEL])
    serving = artifact_utils.get_single_instance(
        output_dict[keys.SERVING_MODEL])
    hub_module = artifact_utils.get_single_instance(
        output_dict[keys.HUB_MODULE])
    config = ExporterConfig.from_exec_properties(exec_properties)
    blessings = input_dict.get(keys.MODEL_BLESSING) or []
    exported = not blessings or all(
        b.get_int_custom_property(keys.BLESSED) == 1 for b in blessings)
    if exported:
      module = module_file.from_model(model.uri)
      if module.builtin:
        export_model(model.uri, serving.uri, hub_module.uri,
                     num_oov_buckets=config.num_oov_buckets,
                     l2_regularization=config.l2_regularization)
      else:
        model_export.export_model_module(model.uri, serving.uri,
                                         hub_module.uri, module)
    else:
      logging.info('Model %s is not blessed (%s); nothing exported.',
                   model.uri, ', '.join(b.uri for b in blessings))
    for artifact in (serving, hub_module):
      artifact.set_string_custom_property(keys.SOURCE_MODEL, model.uri)
      artifact.set_int_custom_property(keys.EXPORTED, int(exported))
