"""ValidatorConfig: every setting of CheckpointValidator."""

import dataclasses
import json
from typing import Any, Dict, Optional

from tpu_embeddings.core import settings
from tpu_embeddings.models.skipgram_config import EVAL_SEQUENCES
from tpu_embeddings.models.skipgram_config import SEEDS
from tpu_embeddings.validation.gates import Thresholds

# Bounds of sparsecore_restore_info's numbers: the largest TPU pods have
# under 10,000 chips, and a chip has at most a few SparseCores.
SPARSECORE_BOUNDS = {'num_tpu_devices': (1, 16_384),
                     'num_sc_chips_per_tpu': (1, 16)}


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
  # Neighbours ranked per query over the whole table: retrieval is judged
  # at 1-100, and 10,000 already ranks a small vocabulary entire.
  k: int = settings.bounded(10, 1, 10_000)
  # Eval sequences read into memory (the held-out loss is capped at 100k
  # pairs of them anyway).
  max_eval_examples: int = settings.bounded(EVAL_SEQUENCES, 1, 1_000_000)
  # Each query ranks every row of the table.
  max_recall_queries: int = settings.bounded(2000, 1, 1_000_000)
  similarity_file: str = ''
  related_pairs_file: str = ''
  analogy_file: str = ''
  sparsecore_restore_info: Optional[Dict[str, Any]] = None
  seed: int = settings.bounded(0, *SEEDS)

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
    info = self.sparsecore_restore_info
    if info is not None:
      for key, bounds in SPARSECORE_BOUNDS.items():
        value = info.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
          raise ValueError(
              'validator parameter sparsecore_restore_info needs a positive '
              f'integer {key!r}, got {value!r}')
        problem = settings.range_problem(value, *bounds)
        if problem:
          raise ValueError('validator parameter sparsecore_restore_info '
                           f'{key!r} {problem}')
