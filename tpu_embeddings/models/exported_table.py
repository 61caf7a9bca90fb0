"""The optional capability `exported_table(spec) -> (table, vocabulary)`.

A module that declares it has one table its exports serve as text
embeddings: row i is token i of the named vocabulary ('' = the single
vocabulary). The exports stream that table (held once, multi-GB ones
included) with sentence tokenization and `lookup` and `neighbors`
signatures (tpu_embeddings/exports/table_source.py); metadata.json gives its
`dim` and `vocabulary_size`, and TensorBoard's projector shows it. The
built-in skip-gram declares it; any module may.
"""

from typing import Optional, Tuple

from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

NAME = 'exported_table'


def declared_table(module: ModelModule,
                   spec: EmbeddingSpec) -> Optional[Tuple[str, str]]:
  """(table, vocabulary) the module declares, checked against `spec`; None
  for a module without the capability."""
  declared = module.hook(NAME)
  if declared is None:
    return None
  found = declared(spec)
  names = {t.name for t in spec.tables}
  if not (isinstance(found, tuple) and len(found) == 2 and
          found[0] in names and isinstance(found[1], str)):
    raise ModelModuleError(
        f'module file {module.path}: {NAME}: returned {found!r}; it must '
        f'return (table name, vocabulary name), the table one of '
        f'{sorted(names)}')
  return found
