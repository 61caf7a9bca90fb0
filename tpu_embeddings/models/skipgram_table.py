"""TableConfig: skip-gram's trained table and its optimizer, and their
defaults, the one source of a bare trainer's spec and the CLI's `table.*`.

Importable without TensorFlow, as the trainer's config is.
"""

import dataclasses

from tpu_embeddings.core import settings
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.spec import bounds as spec_bounds
from tpu_embeddings.spec import optimizer_spec
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


@dataclasses.dataclass(frozen=True)
class TableConfig(settings.Settings):
  """The trained table and its optimizer; builds the trainer's embedding spec.

  Attributes:
    dim: embedding dimension.
    optimizer: 'sgd', 'adagrad', 'adam' or 'ftrl'.
    learning_rate: the optimizer's learning rate.
    initial_accumulator_value: Adagrad / FTRL only. The batch-mean loss gives
      small gradients; a small starting accumulator lets the first updates
      move the rows.
    context_table: word2vec's second table: contexts and negatives are
      scored against a `contexts` table trained beside the exported `tokens`
      one (false: tied vectors, one table).
  """
  WHAT = 'table'

  dim: int = settings.bounded(128, *spec_bounds.DIMS)
  optimizer: str = 'adagrad'
  learning_rate: float = settings.bounded(
      8.0, *optimizer_spec.PARAM_BOUNDS['learning_rate'])
  initial_accumulator_value: float = settings.bounded(
      1e-3, *optimizer_spec.PARAM_BOUNDS['initial_accumulator_value'])
  context_table: bool = True

  def validate(self):
    super().validate()
    self.embedding_spec()

  def embedding_spec(self) -> EmbeddingSpec:
    params = {'learning_rate': self.learning_rate}
    if self.optimizer in ('adagrad', 'ftrl'):
      params['initial_accumulator_value'] = self.initial_accumulator_value
    return skipgram_spec(dim=self.dim, optimizer=self.optimizer,
                         context_table=self.context_table, **params)


def default_spec() -> EmbeddingSpec:
  """The spec of the default table: what a trainer without an
  `embedding_spec` trains."""
  return TableConfig().embedding_spec()
