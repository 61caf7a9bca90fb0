"""Warm start: the step-0 checkpoint of a new model, seeded from a base model.

The base model's table and optimizer slots are read from its checkpoint
(any adapter's, TPU or CPU: the keys are the same). Rows are matched by
token: a token in both vocabularies keeps its vector and slot values
bit-exact, a new token gets the table initializer's value and the
optimizer's initial slot values, a token that left the vocabulary is
dropped; each table follows its own vocabulary. A module's dense model and
its optimizer are restored from the base when the base was trained with the
same module file (same SHA-256), and initialized otherwise: their keys follow
the code. The result is saved as checkpoint 0 of the new model, so training
(on CPU or TPU) starts by restoring it like any other checkpoint.

A damaged base checkpoint (truncated, flipped bytes) is found before the
output is written: `check_readable` reads every tensor the warm start uses,
one at a time, so TensorFlow verifies their checksums. That is one more
sequential read of the base's table and slots, small next to training.
What happens then depends on who chose the base:

* An explicit base (`base_model`, `warm_start_uri`, and `retrain`, which
  names the pushed model's source) fails with one line naming the checkpoint
  and how to proceed. A cold start instead would silently drop everything the
  base learnt on earlier spans: a model trained on the newest span only,
  which is not what was asked for and can still be blessed and pushed.
* `warm_start_from_pushed` passes over a pushed version whose source cannot
  be read and takes the newest readable one, as the validator does for its
  baseline; with none, it is a cold start. Each version passed over is a
  warning in metadata.json (`warm_start_skipped`) and the run summary.
"""

import dataclasses
import glob
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training import checkpoints


class WarmStartError(ValueError):
  """The base model cannot seed this training run; the message says why."""


@dataclasses.dataclass(frozen=True)
class WarmStartReport:
  base_model: str
  base_checkpoint: str
  kept_tokens: int
  new_tokens: int
  dropped_tokens: int
  # The dense model's values: restored from the base, or initialized when
  # the base was trained with another module file ('' without a model).
  dense: str = ''
  # The tables whose rows (and slots) were seeded from the base, by token.
  tables: Tuple[str, ...] = ()

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)


def _source(push_root: str, version: int) -> Tuple[str, str]:
  """(the source model a pushed version names, '') or ('', why it has none
  to give: its manifest cannot be read).

  A relative source lies in the home the push root is in now
  (tpu_embeddings/push_root/home_paths.py): in a copied home, the copy's
  model, never the original home's.
  """
  try:
    manifest = push_layout.read_manifest(push_root, push_layout.SERVED, version)
  except ValueError as e:
    return '', f'pushed version {version} skipped: {e}'
  return home_paths.resolve(manifest.get('source_model', ''), push_root), ''


def pushed_base(push_root: str, spec: EmbeddingSpec) -> Tuple[str, List[str]]:
  """(base, notes): the source model of the newest pushed version that can
  seed a model with `spec`, or '' for a cold start; `notes` says why each
  newer version was passed over (empty when the newest is used or nothing
  was pushed)."""
  notes: List[str] = []
  versions = push_layout.list_versions(push_root, push_layout.SERVED)
  if not versions:
    logging.info('Warm start: nothing pushed under %s yet; cold start',
                 push_root)
  for version in reversed(versions):
    source, note = _source(push_root, version)
    if note:
      pass
    elif not source or not tf.io.gfile.exists(
        model_layout.join(source, model_layout.CHECKPOINT_DIR)):
      note = (f'pushed version {version} names source model {source!r}, '
              'which is gone')
    else:
      try:
        check_compatible(spec, EmbeddingSpec.load(source), source)
        check_readable(source, spec)
      except (ValueError, OSError) as e:  # WarmStartError is a ValueError
        note = f'pushed version {version} skipped: {e}'
      else:
        logging.info('Warm start from pushed version %d: %s', version, source)
        return source, notes
    notes.append(note)
    logging.warning('Warm start: %s; trying an older version', note)
  if notes:
    notes.append('no pushed version can seed this model; cold start')
    logging.warning('Warm start: %s', notes[-1])
  return '', notes


def _first_line(e: BaseException) -> str:
  return f'{type(e).__name__}: {(str(e).splitlines() or [""])[0]}'


def check_readable(base_uri: str, spec: EmbeddingSpec) -> str:
  """The base's latest checkpoint path, once every tensor the warm start
  reads (each table and its optimizer slots) has been read and checksummed.

  Raises WarmStartError naming the checkpoint and its files.
  """
  path = model_layout.latest_checkpoint(base_uri)
  try:
    reader = tf.train.load_checkpoint(path)
    for table in spec.tables:
      keys = [model_layout.table_key(table.name)] + [
          model_layout.slot_key(table.name, s)
          for s in spec.optimizer.slot_names]
      for key in keys:
        if reader.has_tensor(key):
          reader.get_tensor(key)  # checks the tensor's crc32c
  except (IndexError, ValueError, tf.errors.OpError) as e:
    files = ', '.join(sorted(glob.glob(path + '.*'))) if (
        '://' not in path) else path + '.*'
    raise WarmStartError(
        f'warm start from {base_uri}: checkpoint {path} cannot be read '
        f'({_first_line(e)}); its files ({files}) are damaged. Warm start '
        'from an intact model (--set trainer.warm_start_uri=MODEL_URI; for '
        '`retrain`, roll back to a pushed version whose source is intact with '
        '`python -m pipelines rollback`) or train from scratch with '
        '`python -m pipelines run` and --set '
        'trainer.warm_start_from_pushed=false') from e
  return path


def check_compatible(spec: EmbeddingSpec, base: EmbeddingSpec, base_uri: str):
  if base.optimizer.kind != spec.optimizer.kind:
    raise WarmStartError(
        f'warm start from {base_uri}: its optimizer is '
        f'{base.optimizer.kind!r} but this run uses {spec.optimizer.kind!r}; '
        'slots cannot carry over (use the same optimizer kind or no base '
        'model)')
  base_tables = {t.name: t for t in base.tables}
  for table in spec.tables:
    if table.name not in base_tables:
      raise WarmStartError(
          f'warm start from {base_uri}: it has no table {table.name!r} '
          f'(its tables: {sorted(base_tables)})')
    if base_tables[table.name].dim != table.dim:
      raise WarmStartError(
          f'warm start from {base_uri}: table {table.name!r} has dim '
          f'{base_tables[table.name].dim} there but {table.dim} here')


def _row_pairs(vocabulary: vocabulary_file.TokenCounts,
               base_vocabulary: vocabulary_file.TokenCounts):
  """(new rows, old rows) of the tokens in both vocabularies."""
  old_ids = base_vocabulary.ids
  pairs = [(i, old_ids[t]) for i, t in enumerate(vocabulary.tokens)
           if t in old_ids]
  return (np.asarray([p[0] for p in pairs], dtype=np.int64),
          np.asarray([p[1] for p in pairs], dtype=np.int64))


def _read_base(base_uri: str):
  try:
    return (EmbeddingSpec.load(base_uri), vocabularies_lib.read(base_uri))
  except ValueError as e:
    raise WarmStartError(f'warm start from {base_uri}: {e}') from e


def write_initial_checkpoint(
    base_uri: str, spec: EmbeddingSpec,
    vocabularies: vocabularies_lib.Vocabularies, model_uri: str, seed: int,
    dense: Optional[Callable[[str, str], Tuple[Any, Any, str]]] = None
) -> WarmStartReport:
  """Saves checkpoint 0 of `model_uri` with every table's rows (and slots)
  remapped from `base_uri` by token of the table's vocabulary.

  `dense(base_uri, base_checkpoint)` gives the dense model and optimizer to
  save beside the tables (and what became of their values), when the module
  has a model.
  """
  base_spec, base_vocabularies = _read_base(base_uri)
  check_compatible(spec, base_spec, base_uri)
  base_path = model_layout.latest_checkpoint(base_uri)
  checkpoints.check_embedding_keys(base_spec, base_path)
  rows, base_sizes = {}, {}
  for table in spec.tables:
    base_table = base_spec.table(table.name)
    try:
      base_vocabulary = base_vocabularies[base_table.vocabulary]
    except vocabulary_file.VocabularyError as e:
      raise WarmStartError(f'warm start from {base_uri}: {e}') from e
    if len(base_vocabulary) != base_table.vocabulary_size:
      raise WarmStartError(
          f'warm start from {base_uri}: its vocabulary has '
          f'{len(base_vocabulary)} tokens but table {table.name!r} has '
          f'{base_table.vocabulary_size} rows')
    rows[table.name] = _row_pairs(vocabularies[table.vocabulary],
                                  base_vocabulary)
    base_sizes[table.vocabulary] = (len(vocabularies[table.vocabulary]),
                                    len(base_vocabulary),
                                    len(rows[table.name][0]))

  tf.random.set_seed(seed)
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), spec.build_optimizer())
  embedding.build()
  reader = tf.train.load_checkpoint(base_path)
  for table in spec.tables:
    variables = embedding._variables[table.name]
    keys = {'parameters': model_layout.table_key(table.name)}
    keys.update({s: model_layout.slot_key(table.name, s)
                 for s in spec.optimizer.slot_names})
    new_rows, old_rows = rows[table.name]
    for name, key in keys.items():
      if len(new_rows):
        values = reader.get_tensor(key)[old_rows]
        variables[name].scatter_update(tf.IndexedSlices(
            tf.constant(values, tf.float32), tf.constant(new_rows)))
  model, optimizer, dense_note = (dense(base_uri, base_path) if dense else
                                  (None, None, ''))
  saved = checkpoints.create(embedding, model_uri, model, optimizer)
  saved.manager.save(checkpoint_number=0)
  kept = sum(k for _, _, k in base_sizes.values())
  return WarmStartReport(
      base_model=base_uri, base_checkpoint=base_path, kept_tokens=kept,
      new_tokens=sum(n for n, _, _ in base_sizes.values()) - kept,
      dropped_tokens=sum(b for _, b, _ in base_sizes.values()) - kept,
      dense=dense_note, tables=tuple(t.name for t in spec.tables))
