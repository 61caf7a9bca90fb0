"""Exporter entry points only tests use.

`run_in_fresh_process` load-checks exports in one `FreshProcess`;
`export_hub_module` takes an in-memory vocabulary and, through
`from_variable`, an eager table, which it writes to temporary files first.
"""

import dataclasses
import os
import tempfile
from typing import Sequence, Tuple, Union

import tensorflow as tf

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.exports import fresh_process
from tpu_embeddings.exports import load_check
from tpu_embeddings.exports import table_hub
from tpu_embeddings.exports.table_canary import Canary


def run_in_fresh_process(exports: Sequence[Tuple[str, str]], canary: Canary,
                         timeout_seconds: float = (
                             fresh_process.DEFAULT_TIMEOUT_SECONDS)):
  """Loads each `(kind, export_dir)` in one new Python process.

  Raises LoadCheckError naming the export and the reason on any failure.
  """
  for kind, _ in exports:
    load_check.check_kind(kind)
  with fresh_process.FreshProcess(timeout_seconds) as process:
    for kind, path in exports:
      process.submit(kind, path, canary)
    process.wait()


@dataclasses.dataclass(frozen=True)
class VariableRows:
  variable: tf.Variable


def from_variable(variable: tf.Variable) -> VariableRows:
  """An eager table, e.g. `RestoredModel.table(name)`, as Hub module rows."""
  return VariableRows(variable)


def export_hub_module(rows: Union[VariableRows, table_hub.TableRows],
                      vocabulary: vocabulary_file.TokenCounts,
                      export_dir: str, **kwargs):
  """`table_hub.export_hub_module` with the table and tokens in memory."""
  with tempfile.TemporaryDirectory(prefix='hub-export-') as tmp:
    if isinstance(rows, VariableRows):
      prefix = tf.train.Checkpoint(embeddings=rows.variable).write(
          os.path.join(tmp, 'table'))
      rows = table_hub.TableRows.from_checkpoint(
          prefix, 'embeddings/.ATTRIBUTES/VARIABLE_VALUE')
    tokens_path = os.path.join(tmp, serving_contract.TOKENS_ASSET_FILENAME)
    vocabulary_file.write_tokens(tokens_path, vocabulary)
    table_hub.export_hub_module(rows, tokens_path, export_dir, **kwargs)
