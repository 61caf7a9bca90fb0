"""VocabularyConfig: which tokens the vocabulary keeps."""

import dataclasses
from typing import Any, Dict

from tpu_embeddings.core import settings
from tpu_embeddings.core import splits
from tpu_embeddings.spec.bounds import ROWS


@dataclasses.dataclass(frozen=True)
class VocabularyConfig(settings.Settings):
  """Settings of the Vocabulary component.

  Attributes:
    min_count: tokens seen fewer times are dropped.
    max_tokens: the most frequent tokens kept (0: no cap).
    split: the Examples split counted.
    vocabularies: {vocabulary: [feature, ...]}: one vocabulary per name,
      counting the tokens of its features (a module file's FEATURES, grouped
      by vocabulary); {} counts skip-gram's `tokens` into the single
      vocabulary.
  """
  WHAT = 'Vocabulary'

  # 1 keeps every token; above a billion even "the" of a corpus of 20
  # billion tokens would be dropped.
  min_count: int = settings.bounded(5, 1, 10**9)
  # 0: no cap; at most a table's rows (tpu_embeddings.spec.bounds).
  max_tokens: int = settings.bounded(0, *ROWS)
  split: str = splits.TRAIN_SPLIT
  vocabularies: Dict[str, Any] = dataclasses.field(default_factory=dict)

  def validate(self):
    super().validate()
    for name, features in self.vocabularies.items():
      if not name or '/' in name or name.startswith('.'):
        raise ValueError(f'{self.WHAT} parameter vocabularies: bad name '
                         f'{name!r} (non-empty, no "/", not starting with '
                         '".")')
      if not isinstance(features, (list, tuple)) or not features or not all(
          isinstance(f, str) and f for f in features):
        raise ValueError(f'{self.WHAT} parameter vocabularies: {name!r} '
                         'needs a list of feature names, got '
                         f'{features!r}')
