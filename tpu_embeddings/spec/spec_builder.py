"""The common EmbeddingSpecs of a module file, built from its FEATURES.

    from tpu_embeddings.spec import spec_builder

    FEATURES = {'user_id': 'user_id', 'item_id': 'item_id'}

    def embedding_spec(ctx):
      return spec_builder.id_tables(FEATURES, dim=32,
                                    biased=('user_id', 'item_id'))

* One table per id feature: every vocabulary of FEATURES gets a table named
  after it, and each feature is looked up in its vocabulary's table.
* A shared table: features naming one vocabulary in FEATURES share its table
  (the two-tower example's `history` and `item_id`); `tables` names other
  tables, e.g. two tables over one vocabulary.
* A per-id bias: a feature reads exactly one table, so an id's bias lives
  in its own row: a table named in `biased` is one column wider than its
  dim, and `split_bias(activation)` gives the vector and the bias. The bias
  column has its own optimizer slots (Adagrad's accumulator is per element),
  so it trains as a separate dim-1 table would, on TPU and CPU alike.

Every table is sized from its vocabulary (vocabulary_size 0). The default
optimizer is `SCALED_LOSS_ADAGRAD`: a loss scaled by 1/global batch
(`ctx.scale_loss`) gives a row a gradient g of about 1/B per occurrence
(0.004 at B = 256), and Adagrad steps by rate * g / sqrt(accumulator):
TF's defaults (rate 0.001, accumulator 0.1) move a row by 1.2e-5 on its
first occurrence, these (0.1, 1e-3) by 0.012.
"""

from typing import Mapping, Optional, Sequence, Union

from tpu_embeddings.spec.bounds import DIMS
from tpu_embeddings.spec.checks import check_int
from tpu_embeddings.spec.checks import fail
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.spec.embedding_spec import FeatureSpec
from tpu_embeddings.spec.embedding_spec import TableSpec
from tpu_embeddings.spec.optimizer_spec import OptimizerSpec

SCALED_LOSS_ADAGRAD = OptimizerSpec(
    'adagrad', (('initial_accumulator_value', 1e-3), ('learning_rate', 0.1)))
# Columns a biased table adds to its dim.
BIAS_COLUMNS = 1


def id_tables(features: Mapping[str, str],
              dim: Union[int, Mapping[str, int]],
              biased: Sequence[str] = (),
              tables: Optional[Mapping[str, str]] = None,
              optimizer: OptimizerSpec = SCALED_LOSS_ADAGRAD,
              combiner: str = 'mean') -> EmbeddingSpec:
  """An EmbeddingSpec with a table per vocabulary (or per `tables` name).

  Args:
    features: the module's FEATURES, {Examples feature: vocabulary}.
    dim: every table's width, or {table: width} for each table.
    biased: tables whose rows end in a bias column (width dim + 1).
    tables: {feature: table} for features not in their vocabulary's table;
      the features of one table must name one vocabulary.
    optimizer: the embedding optimizer.
    combiner: how a bag of several tokens becomes one activation.

  Returns:
    The spec; each table follows the vocabulary of its features.
  """
  if not features:
    fail('features', 'FEATURES is empty: map each Examples feature to the '
         'vocabulary of its tokens')
  table_of = {f: (tables or {}).get(f, v) for f, v in features.items()}
  unknown = sorted(set(tables or {}) - set(features))
  if unknown:
    fail('tables', f'{unknown} are not in FEATURES {sorted(features)}')
  names = sorted(set(table_of.values()))
  for name in biased:
    if name not in names:
      fail('biased', f'{name!r} is not a table; tables are {names}')
  specs = []
  for name in names:
    vocabulary = _vocabulary(name, table_of, features)
    width = _dim(dim, name) + (BIAS_COLUMNS if name in biased else 0)
    specs.append(TableSpec(name, width, combiner=combiner,
                           vocabulary=vocabulary))
  return EmbeddingSpec(
      tables=tuple(specs),
      features=tuple(FeatureSpec(f, table_of[f]) for f in sorted(features)),
      optimizer=optimizer)


def _vocabulary(table: str, table_of: Mapping[str, str],
                features: Mapping[str, str]) -> str:
  found = sorted({features[f] for f, t in table_of.items() if t == table})
  if len(found) > 1:
    fail(f'tables.{table}', f'its features come from vocabularies {found}; '
         'features sharing a table must share its vocabulary')
  return found[0]


def _dim(dim: Union[int, Mapping[str, int]], table: str) -> int:
  if isinstance(dim, Mapping):
    if table not in dim:
      fail(f'tables.{table}.dim', f'no width given; dim names {sorted(dim)}')
    dim = dim[table]
  check_int(f'tables.{table}.dim', dim, *DIMS)
  return dim


def split_bias(activation):
  """[B, dim + 1] activation of a biased table -> ([B, dim] vector, [B]
  bias)."""
  return activation[..., :-BIAS_COLUMNS], activation[..., -1]
