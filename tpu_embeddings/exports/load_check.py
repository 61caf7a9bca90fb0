"""The load check of one export, in the calling process.

An export passes when it is a directory of its kind (`ExportKind.checker`
of tpu_embeddings/artifacts/export_kinds.py) that loads and answers its
model's canary as the restored model did. A canary is either format's: a
table's (`table_canary`, checked by `table_check`) or a module's
(`module_canary`); each holds a check for every registered export kind.
`fresh_process` runs these checks in a new Python process that sees only
the files on disk; the exporter runs the graph loaders' checks in its own
process for exports too large for a second interpreter beside it.
"""

from typing import Any, Callable, Dict, Tuple

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.exports import module_canary
from tpu_embeddings.exports import table_check
from tpu_embeddings.exports.load_errors import LoadCheckError
from tpu_embeddings.exports.table_canary import Canary

Checks = Dict[str, Callable[..., None]]
# {canary format: (its class, {export kind: check(export_dir, canary)},
#                  the same through graph loaders only)}.
FORMATS: Dict[str, Tuple[Any, Checks, Checks]] = {
    Canary.FORMAT: (Canary, table_check.CHECKS, table_check.GRAPH_CHECKS),
    module_canary.ModelCanary.FORMAT: (module_canary.ModelCanary,
                                       module_canary.CHECKS,
                                       module_canary.GRAPH_CHECKS),
}


def check_kind(kind: str):
  """Raises LoadCheckError unless `kind` is a registered export kind."""
  if kind not in export_kinds.NAMES:
    raise LoadCheckError(
        f'unknown export kind {kind!r}; one of {export_kinds.NAMES}')


def _format(name: str):
  if name not in FORMATS:
    raise LoadCheckError(
        f'unknown canary format {name!r}; one of {sorted(FORMATS)}')
  return FORMATS[name]


def load_canary(canary_format: str, path: str):
  """The canary of `canary_format` saved at `path`."""
  return _format(canary_format)[0].load(path)


def check(kind: str, export_dir: str, canary, graph_only: bool = False):
  """Load-checks one export of `kind` in this process: with every loader of
  its kind (what `fresh_process` runs), or, `graph_only`, with the graph
  loaders (`graph_loaders`), whose graphs share nothing with the process's
  eager context: the exporting process runs those itself."""
  check_kind(kind)
  problems = export_kinds.get(kind).checker(export_dir)
  if problems:
    raise LoadCheckError(problems[0])
  _format(canary.FORMAT)[2 if graph_only else 1][kind](export_dir, canary)
