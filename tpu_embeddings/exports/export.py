"""Every export kind of a Model, load-checked, then moved into its output.

One path for every model:

1. the Model is restored as its module declares (`source_of`): one table
   of text embeddings (`table_source`, for a module with `exported_table`)
   or the module's own signatures (`module_source`). For a module's
   exports of at most `limits.OVERLAP_MAX_BYTES`, a fresh Python process
   starts first, so its TensorFlow import overlaps the export
   (`fresh_process`);
2. each kind of `tpu_embeddings.artifacts.export_kinds` is written in
   registry order into a temporary directory beside its output (a name
   starting with "."); once all are written, exports over
   OVERLAP_MAX_BYTES give the table's memory back (`tf_allocator.release`;
   a full garbage collection costs about half a second in a process that
   imported TFX, more than a small table's writes);
3. each is loaded and checked against the model's canary, every loader in
   a graph and a session of its own (`graph_loaders`), which share nothing
   with this process's eager state:
   * a table's exports (`SELF_CONTAINED`: built by this library's code
     alone, of stock TensorFlow ops) in this process, with every loader of
     their kind, once both are written;
   * a module's exports in the fresh process, with every loader of their
     kind, each while the next kind is written: the module's code may
     have registered ops or objects in this process that a server lacks;
   * exports over OVERLAP_MAX_BYTES in this process once the table is
     released, one after the other, with the loaders of TF Serving and TF1
     Hub consumers only: a second interpreter with its own copy of the
     table would not fit in the pod beside this one (TFX's executor
     imports alone hold about 0.7 GB);
4. only then each moves into its output: `ExportKind.artifact_path` of the
   output URI (the SavedModel to `<uri>/Format-Serving/`, where TFX's
   `path_utils.serving_model_path` and the stock Pusher, Evaluator and
   InfraValidator look for it; the Hub module to the URI itself), so an
   output holds a complete export or nothing.
"""

import dataclasses
import functools
import os
import shutil
from typing import Dict, List, Mapping

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.core import file_system
from tpu_embeddings.core import tf_allocator
from tpu_embeddings.exports import fresh_process
from tpu_embeddings.exports import limits
from tpu_embeddings.exports import load_check
from tpu_embeddings.exports import load_errors
from tpu_embeddings.exports import staging
from tpu_embeddings.exports import table_hub
from tpu_embeddings.exports.module_source import ModuleSource
from tpu_embeddings.exports.table_source import TableSource
from tpu_embeddings.models import exported_table
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


@dataclasses.dataclass(frozen=True)
class ExportOptions:
  """How the exports are built and checked.

  Attributes:
    num_oov_buckets: zero rows for OOV tokens in a table's Hub module.
    l2_regularization: the L2 loss of a table's Hub module's {"train"} tags.
    load_check_timeout_seconds: of the fresh-process check of a module's
      exports.
  """
  num_oov_buckets: int = table_hub.DEFAULT_NUM_OOV_BUCKETS
  l2_regularization: float = table_hub.DEFAULT_L2_REGULARIZATION
  load_check_timeout_seconds: float = fresh_process.DEFAULT_TIMEOUT_SECONDS


def _declared_source(model_uri: str, module, scratch_dir: str,
                     options: ExportOptions):
  """(the source class the module declares, a call that restores it)."""
  spec = EmbeddingSpec.load(model_uri)
  table = exported_table.declared_table(module, spec)
  if table is None:
    return ModuleSource, functools.partial(ModuleSource, model_uri, module,
                                           scratch_dir)
  return TableSource, functools.partial(
      TableSource, model_uri, spec, *table, scratch_dir,
      options.num_oov_buckets, options.l2_regularization)


def source_of(model_uri: str, module, scratch_dir: str,
              options: ExportOptions):
  """The Model restored as its module declares: a `TableSource` for a
  module with `exported_table`, else a `ModuleSource`."""
  return _declared_source(model_uri, module, scratch_dir, options)[1]()


def _write_and_check(source, dirs: Mapping[str, str],
                     checker: fresh_process.FreshProcess):
  """Writes every kind and hands each to the load check in a fresh process
  while the next is written; returns once every check is submitted."""
  for kind in export_kinds.NAMES:
    with staging.phase(f'{kind} export'):
      source.writers[kind](dirs[kind])
    checker.submit(kind, dirs[kind], source.canary)


def _write(source, dirs: Mapping[str, str]):
  """Writes every kind; returns the canary."""
  for kind in export_kinds.NAMES:
    with staging.phase(f'{kind} export'):
      source.writers[kind](dirs[kind])
  return source.canary


def _check_here(dirs: Mapping[str, str], canary, large: bool):
  """Load-checks every kind in this process, one after the other: with
  every loader of its kind, or, `large`, with the loaders of TF Serving and
  TF1 Hub consumers only, each export's memory freed before the next
  loads."""
  for kind in export_kinds.NAMES:
    with staging.phase(f'{kind} load check'):
      try:
        load_check.check(kind, dirs[kind], canary, graph_only=large)
      except Exception as e:
        raise load_errors.LoadCheckError(
            f'load check failed: {kind} export {dirs[kind]}: '
            f'{type(e).__name__}: {load_errors.reason(e)}') from e
    if large:
      tf_allocator.release()


def _tables_bytes(model_uri: str) -> int:
  """Bytes of every table of the Model's spec, known before a restore."""
  spec = EmbeddingSpec.load(model_uri)
  return sum(t.vocabulary_size * t.dim * 4 for t in spec.tables)


def _export(model_uri: str, module, scratch_dir: str,
            dirs: Mapping[str, str],
            checkers: List[fresh_process.FreshProcess],
            options: ExportOptions):
  """Restores, writes every kind into `dirs` and checks each: a module's
  exports of at most `limits.OVERLAP_MAX_BYTES` in a fresh process
  (`checkers`, still to be waited for), any other here."""
  source_class, restore = _declared_source(model_uri, module, scratch_dir,
                                           options)
  if (not source_class.SELF_CONTAINED and
      _tables_bytes(model_uri) <= limits.OVERLAP_MAX_BYTES):
    # Imports TensorFlow while this process restores and exports.
    checkers.append(
        fresh_process.FreshProcess(options.load_check_timeout_seconds))
  source = restore()
  large = source.table_bytes > limits.OVERLAP_MAX_BYTES
  if source.SELF_CONTAINED or large:
    for checker in checkers:
      checker.close()
    checkers.clear()
    canary = _write(source, dirs)
    del source
    if large:
      tf_allocator.release()
    _check_here(dirs, canary, large)
    return
  if not checkers:
    checkers.append(
        fresh_process.FreshProcess(options.load_check_timeout_seconds))
  _write_and_check(source, dirs, checkers[0])


def check_outputs(outputs: Mapping[str, str]):
  """ValueError unless `outputs` names one URI per registered kind."""
  if set(outputs) != set(export_kinds.NAMES) or not all(outputs.values()):
    raise ValueError(f'export: give one output URI per export kind '
                     f'{export_kinds.NAMES}, got {dict(outputs)}')


def export_model(model_uri: str, outputs: Mapping[str, str], module,
                 options: ExportOptions = ExportOptions()) -> Dict[str, str]:
  """Writes every export kind of the Model at `model_uri`, load-checked.

  Args:
    model_uri: the trainer's Model.
    outputs: {export kind: output URI}; each may exist, empty.
    module: the Model's `ModelModule`.
    options: `ExportOptions`.

  Returns:
    {export kind: the export's directory} (inside its output URI).
  """
  check_outputs(outputs)
  stages: Dict[str, str] = {}
  checkers: List[fresh_process.FreshProcess] = []
  try:
    for kind in export_kinds.NAMES:
      stages[kind] = file_system.staging_dir(outputs[kind], 'exporting')
    dirs = {kind: os.path.join(stage, 'export')
            for kind, stage in stages.items()}
    _export(model_uri, module, stages[export_kinds.NAMES[0]], dirs,
            checkers, options)
    with staging.phase('load check (rest)'):
      for checker in checkers:
        checker.wait()
    for kind in export_kinds.NAMES:
      staging.move_into_output(dirs[kind], outputs[kind],
                               export_kinds.get(kind).artifact_dir)
    return {kind: export_kinds.get(kind).artifact_path(outputs[kind])
            for kind in export_kinds.NAMES}
  finally:
    for checker in checkers:
      checker.close()
    for path in stages.values():
      shutil.rmtree(path, ignore_errors=True)
