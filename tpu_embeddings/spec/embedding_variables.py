"""The variables of a built TPU embedding object, by table.

`TPUEmbedding` and `TPUEmbeddingForServing` create each table's parameters
and its optimizer's slot variables when built, and hold them as
`{table: {'parameters': variable, <slot name>: variable}}` in a private
attribute: the mid-level API has no public accessor (its checkpoints track
the same variables as `embedding/<table>` and `embedding/<table>.S<slot>`).
This module is the one place that reads it.
"""

from typing import Any, Dict

# A table's own variable among its variables (the others are slots).
PARAMETERS = 'parameters'


def table_variables(embedding: Any) -> Dict[str, Dict[str, Any]]:
  """{table: {'parameters': its variable, <slot>: slot variable}} of a
  built embedding object."""
  return embedding._variables


def parameters(embedding: Any, table: str) -> Any:
  """The variable holding `table`'s rows."""
  return table_variables(embedding)[table][PARAMETERS]
