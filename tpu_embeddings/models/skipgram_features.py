"""The skip-gram model's features and tables in an embedding spec.

`target` reads the exported `tokens` table; `context` and `negatives` read
it too (tied vectors) or word2vec's second `contexts` table.
"""

from typing import Tuple

from tpu_embeddings.spec.checks import fail
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.spec.embedding_spec import FeatureSpec
from tpu_embeddings.spec.embedding_spec import TableSpec
from tpu_embeddings.spec.optimizer_spec import OptimizerSpec

TOKENS_TABLE = 'tokens'
CONTEXTS_TABLE = 'contexts'
TARGET_FEATURE = 'target'
CONTEXT_FEATURE = 'context'
NEGATIVES_FEATURE = 'negatives'
SKIPGRAM_FEATURES = (TARGET_FEATURE, CONTEXT_FEATURE, NEGATIVES_FEATURE)
# The fused CPU step of skip-gram's loss (training/fused_step.py), by the
# name a module declares in FUSED_STEP.
SKIP_GRAM_STEP = 'skip_gram'


def skipgram_spec(dim: int = 32,
                  optimizer: str = 'adagrad',
                  vocabulary_size: int = 0,
                  initializer: str = 'uniform',
                  combiner: str = 'sqrtn',
                  context_table: bool = False,
                  **optimizer_params) -> EmbeddingSpec:
  """The `target`, `context` and `negatives` features of skip-gram.

  With `context_table` (word2vec), targets read the `tokens` table and
  contexts and negatives a second, zero-initialized `contexts` table; without
  it all three read `tokens` (tied vectors). `tokens` is the exported table.
  """
  tables = [TableSpec(name=TOKENS_TABLE, dim=dim,
                      vocabulary_size=vocabulary_size,
                      initializer=initializer, combiner=combiner)]
  output = TOKENS_TABLE
  if context_table:
    output = CONTEXTS_TABLE
    tables.append(TableSpec(name=CONTEXTS_TABLE, dim=dim,
                            vocabulary_size=vocabulary_size,
                            initializer='zeros', combiner=combiner))
  return EmbeddingSpec(
      tables=tuple(tables),
      features=(FeatureSpec(TARGET_FEATURE, TOKENS_TABLE),
                FeatureSpec(CONTEXT_FEATURE, output),
                FeatureSpec(NEGATIVES_FEATURE, output)),
      optimizer=OptimizerSpec(kind=optimizer,
                              params=tuple(sorted(optimizer_params.items()))))


def skipgram_tables(spec: EmbeddingSpec) -> Tuple[str, str]:
  """(input table, output table) of a skip-gram spec; the same name when tied.

  The input table (read by `target`) is the one exported and scored; the
  output table (read by `context` and `negatives`) only scores pairs.
  Raises SpecError unless the spec is exactly skip-gram's features on one
  table or on two.
  """
  features = {f.name: f for f in spec.features}
  if set(features) != set(SKIPGRAM_FEATURES):
    fail('features', f'skip-gram needs exactly the features '
         f'{list(SKIPGRAM_FEATURES)}, got {sorted(features)} (build the spec '
         'with tpu_embeddings.models.skipgram_features.skipgram_spec)')
  for name in SKIPGRAM_FEATURES:
    if features[name].max_sequence_length or features[name].output_shape:
      fail(f'features.{name}', 'must have no max_sequence_length or '
           'output_shape (dense ids)')
  source = features[TARGET_FEATURE].table
  output = features[CONTEXT_FEATURE].table
  if features[NEGATIVES_FEATURE].table != output:
    fail('features.negatives', f'must read the context feature\'s table '
         f'{output!r}, not {features[NEGATIVES_FEATURE].table!r}')
  used = {source, output}
  unused = sorted({t.name for t in spec.tables} - used)
  if unused:
    fail('tables', f'table(s) {unused} are read by no skip-gram feature')
  if source != output and spec.table(source).dim != spec.table(output).dim:
    fail('tables', f'tables {source!r} and {output!r} must have the same dim '
         'to score pairs')
  return source, output
