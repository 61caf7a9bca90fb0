"""The models a validation scores, as `eval_fn` sees them (`Served`).

* candidate: the restored Model's signatures (built in-process when its
  module declares signatures) and its tables' rows, read-only views of the
  restored variables' buffers (`Variable.numpy()` would copy a multi-GB
  table);
* baseline: the pushed SavedModel's signatures and its tables' rows by the
  candidate's vocabularies (zeros for tokens it does not know): for the
  first table of each vocabulary, what its `lookup` signature serves; else
  the table a module model's export holds (`baseline.exported_rows`).

Also what the report shows of them: what the restore read, row norms, and
the nearest neighbours of every table.
"""

from typing import Any, Dict, Mapping, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import served as served_lib
from tpu_embeddings.quality import inspection
from tpu_embeddings.quality import metrics
from tpu_embeddings.validation import baseline as baseline_lib


def table_view(variable: tf.Variable) -> np.ndarray:
  """A restored table's values without a copy: a read-only view of the
  variable's buffer."""
  view = np.asarray(variable.value())
  view.flags.writeable = False
  return view


def candidate(restored, directory: str, role: str = served_lib.CANDIDATE,
              label: str = '') -> served_lib.Served:
  """A restored Model as `eval_fn` sees it; its vocabulary files (for its
  signatures' lookups) are written into `directory`."""
  signatures = {}
  if restored.module.hook('signatures') is not None:
    serving = restored.serving_model(restored.write_vocabularies(directory))
    signatures = serving.served()
  return served_lib.Served(signatures, role, restored.spec,
                           lambda table: table_view(restored.table(table)),
                           label)


def baseline(found: baseline_lib.Baseline, spec, ctx) -> served_lib.Served:
  """The pushed baseline as `eval_fn` sees it (rows of `spec`'s tables by
  the candidate's vocabularies)."""
  served_tables = {}
  for t in spec.tables:
    served_tables.setdefault(t.vocabulary, t.name)

  def rows(table: str) -> Optional[np.ndarray]:
    vocabulary = next(t.vocabulary for t in spec.tables if t.name == table)
    tokens = ctx.vocabulary(vocabulary).tokens
    try:
      found_rows = (baseline_lib.lookup_rows(found, tokens)
                    if served_tables[vocabulary] == table else None)
      if found_rows is None:
        found_rows = baseline_lib.exported_rows(found, table, vocabulary,
                                                tokens)
      return found_rows
    except (baseline_lib.BaselineError, tf.errors.OpError, ValueError) as e:
      logging.warning('Baseline: %s serves no rows of table %r (%s)',
                      found.path, table, e)
      return None

  serve = served_lib.Served(served_lib.from_loaded(found.loaded),
                            served_lib.BASELINE, found.source_spec(), rows,
                            f'baseline version {found.version}')
  for t in spec.tables:  # read while the SavedModel is loaded
    serve.rows(t.name)
  return serve


def norms(serve: Optional[served_lib.Served], table: str
          ) -> Optional[np.ndarray]:
  """Row norms of `table` as `serve` holds it (None: it does not)."""
  rows = serve.rows(table) if serve is not None else None
  return None if rows is None else metrics.row_norms(rows)


def restored_variables(restored) -> Dict[str, Any]:
  """What the restore created vs what the checkpoint holds (slots skipped)."""
  variables = [v for v in tf.train.TrackableView(
      restored.embedding).descendants() if isinstance(v, tf.Variable)]
  reader = tf.train.load_checkpoint(restored.checkpoint_path)
  dtypes = reader.get_variable_to_dtype_map()
  prefix = model_layout.EMBEDDING_KEY + '/'
  in_checkpoint = {
      key: int(np.prod(shape)) * dtypes[key].size
      for key, shape in reader.get_variable_to_shape_map().items()
      if key.startswith(prefix)}
  table_keys = {model_layout.table_key(t.name) for t in restored.spec.tables}
  return {
      'checkpoint': restored.checkpoint_path,
      'restored_variables': [
          {'name': v.name, 'shape': v.shape.as_list(),
           'bytes': v.shape.num_elements() * v.dtype.size} for v in variables],
      'restored_bytes': int(sum(v.shape.num_elements() * v.dtype.size
                                for v in variables)),
      'checkpoint_table_bytes': int(sum(
          b for k, b in in_checkpoint.items() if k in table_keys)),
      'checkpoint_slot_bytes_not_loaded': int(sum(
          b for k, b in in_checkpoint.items() if k not in table_keys)),
  }


def inspect(spec, serves: Mapping[str, served_lib.Served], ctx
            ) -> Dict[str, Any]:
  """Nearest neighbours of a few tokens of every table, candidate and
  baseline side by side; a map of the first table's frequent tokens."""
  tables = {}
  for t in spec.tables:
    rows = {role: serves[role].rows(t.name) for role in serves}
    rows = {role: r for role, r in rows.items() if r is not None}
    tables[t.name] = inspection.neighbours_by_bucket(
        ctx.vocabulary(t.vocabulary).tokens, rows)
  first = spec.tables[0]
  return {'neighbours': tables,
          'map': dict(inspection.pca_map(
              serves[served_lib.CANDIDATE].rows(first.name),
              ctx.vocabulary(first.vocabulary).tokens), table=first.name)}
