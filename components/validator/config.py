"""ValidatorConfig: every setting of CheckpointValidator."""

import dataclasses
import json
from typing import Any, Dict, Optional

from components.validator.gates import Thresholds
from tpu_embeddings.models.skipgram_config import EVAL_SEQUENCES


@dataclasses.dataclass(frozen=True)
class ValidatorConfig(Thresholds):
  """Settings of CheckpointValidator: what is scored, and the gates' limits.

  Attributes:
    k: neighbours for recall@k.
    max_eval_examples: eval sequences read.
    max_recall_queries: (target, context) pairs ranked for recall@k.
    similarity_file: optional WordSim-353 style "w1<TAB>w2<TAB>score" file.
    related_pairs_file: optional "tokenA<TAB>tokenB" file.
    analogy_file: optional analogy questions "a b c d" with ": section"
      headers (gensim's questions-words.txt).
    sparsecore_restore_info: for SparseCore checkpoints, e.g.
      {"num_tpu_devices": 4, "num_sc_chips_per_tpu": 4} (a dict or its JSON).
    seed: seed of the shared negative draw and recall sample.
    (and the limits of `gates.Thresholds`)
  """
  k: int = 10
  max_eval_examples: int = EVAL_SEQUENCES
  max_recall_queries: int = 2000
  similarity_file: str = ''
  related_pairs_file: str = ''
  analogy_file: str = ''
  sparsecore_restore_info: Optional[Dict[str, Any]] = None
  seed: int = 0

  def __post_init__(self):
    info = self.sparsecore_restore_info
    if isinstance(info, str):
      try:
        info = json.loads(info) if info else None
      except json.JSONDecodeError as e:
        raise ValueError('validator parameter sparsecore_restore_info is not '
                         f'valid JSON: {e}') from e
      object.__setattr__(self, 'sparsecore_restore_info', info)
    super().__post_init__()

  def validate(self):
    super().validate()
    for name, minimum in (('k', 1), ('max_eval_examples', 1),
                          ('max_recall_queries', 1), ('seed', 0)):
      self.check_int(name, minimum)
    info = self.sparsecore_restore_info
    if info is not None:
      for key in ('num_tpu_devices', 'num_sc_chips_per_tpu'):
        value = info.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
          raise ValueError(
              'validator parameter sparsecore_restore_info needs a positive '
              f'integer {key!r}, got {value!r}')
