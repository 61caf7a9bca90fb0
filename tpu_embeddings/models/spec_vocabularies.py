"""Which vocabulary each table of a spec follows, and the sizes it gives.

A table's rows are the tokens of one vocabulary: the one FEATURES names for
the features looked up in it (they must agree), else the one the table
names, else the artifact's single vocabulary (skip-gram's).
"""

from typing import Mapping

from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.spec.checks import fail
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


def table_vocabulary(spec: EmbeddingSpec, table: str,
                     features: Mapping[str, str]) -> str:
  """The vocabulary table `table` follows (raises SpecError naming it)."""
  declared = spec.table(table).vocabulary
  named = {features[f]: f for f in spec.features_of(table) if f in features}
  if len(named) > 1:
    fail(f'tables.{table}', 'its features '
         f'{sorted(named.values())} come from different vocabularies '
         f'{sorted(named)} (FEATURES); features sharing a table must share '
         'its vocabulary')
  if named and declared and declared not in named:
    fail(f'tables.{table}.vocabulary', f'is {declared!r} but FEATURES gives '
         f'its features vocabulary {next(iter(named))!r}')
  return next(iter(named)) if named else declared


def resolve(spec: EmbeddingSpec, features: Mapping[str, str],
            vocabularies: vocabularies_lib.Vocabularies) -> EmbeddingSpec:
  """The spec with each table's vocabulary named and its size set.

  A size of 0 is set from the vocabulary; any other must equal it.
  """
  for t in spec.tables:
    name = table_vocabulary(spec, t.name, features)
    size = len(vocabularies[name])
    if t.vocabulary_size not in (0, size):
      which = f' {name!r}' if name else ''
      fail(f'tables.{t.name}',
           f'has vocabulary_size {t.vocabulary_size} but the vocabulary'
           f'{which} has {size} tokens; set it to 0 to size it from the '
           'vocabulary')
    spec = spec.with_table(t.name, vocabulary=name, vocabulary_size=size)
  return spec
