"""The corpus-size rule: skip-gram's learning rate and subsample threshold
follow the size of the corpus the trainer reads.

The defaults (Adagrad at 8, subsample 1e-3) were chosen on texts of 58k-453k
tokens. On 12M tokens of books a quarter of that rate and a tenth of that
threshold score better on every similarity set and train faster, since the
most frequent words are thinned harder (the measurements are in
docs/defaults.md, under its corpus scaling heading). The rule keeps both
settings as given up to SMALL_TOKENS in-vocabulary tokens, multiplies them
by RATE_FACTOR and SUBSAMPLE_FACTOR from LARGE_TOKENS up, and by the same
factors raised to a power growing linearly in log tokens in between.

It applies to a model that reads `trainer.corpus_scaling` (the built-in
skip-gram; a module file that lists it in SETTINGS_READ) while the setting
is true; the learning rate only to a spec built from the settings
(SPEC_FROM_SETTINGS). The trainer records what it applied in the Model's
metadata (`corpus_scaling`) and the run summary states it.
"""

import dataclasses
import math
from typing import Any, Dict, Optional, Tuple

from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.skipgram_config import CORPUS_SCALING
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training.config import TrainerConfig

METADATA_KEY = 'corpus_scaling'
SMALL_TOKENS = 1_000_000
LARGE_TOKENS = 10_000_000
RATE_FACTOR = 0.25
SUBSAMPLE_FACTOR = 0.1


@dataclasses.dataclass(frozen=True)
class Scaling:
  """What the rule did: the corpus's tokens, and each setting as given and
  as applied (the learning rate None when the spec is the module's own)."""
  tokens: int
  subsample: Tuple[float, float]
  learning_rate: Optional[Tuple[float, float]] = None

  def to_dict(self) -> Dict[str, Any]:
    return {'tokens': self.tokens, 'subsample': list(self.subsample),
            'learning_rate': (list(self.learning_rate)
                              if self.learning_rate else None)}


def reach(tokens: int) -> float:
  """How far `tokens` is along the rule: 0 up to SMALL_TOKENS, 1 from
  LARGE_TOKENS, linear in log tokens between."""
  if tokens <= SMALL_TOKENS:
    return 0.0
  if tokens >= LARGE_TOKENS:
    return 1.0
  return math.log(tokens / SMALL_TOKENS) / math.log(LARGE_TOKENS /
                                                    SMALL_TOKENS)


def factors(tokens: int) -> Tuple[float, float]:
  """(learning rate factor, subsample factor) for a corpus of `tokens`."""
  r = reach(tokens)
  return RATE_FACTOR**r, SUBSAMPLE_FACTOR**r


def corpus_tokens(vocabularies: vocabularies_lib.Vocabularies) -> int:
  """The corpus's in-vocabulary tokens: the largest vocabulary's count."""
  return max((int(sum(v.counts)) for v in vocabularies.by_name.values()),
             default=0)


def _with_learning_rate(spec: EmbeddingSpec, rate: float) -> EmbeddingSpec:
  params = dict(spec.optimizer.params)
  params['learning_rate'] = rate
  optimizer = dataclasses.replace(spec.optimizer,
                                  params=tuple(sorted(params.items())))
  return dataclasses.replace(spec, optimizer=optimizer)


def apply(config: TrainerConfig, module: ModelModule,
          vocabularies: vocabularies_lib.Vocabularies
          ) -> Tuple[TrainerConfig, Optional[Scaling]]:
  """`config` with the rule applied for the corpus `vocabularies` counted,
  and what it did; `config` and None where the rule does not apply."""
  if (not config.corpus_scaling or
      CORPUS_SCALING not in module.declared('SETTINGS_READ', ())):
    return config, None
  tokens = corpus_tokens(vocabularies)
  rate_factor, subsample_factor = factors(tokens)
  spec = config.spec() if module.declared('SPEC_FROM_SETTINGS') else None
  given = spec.optimizer.learning_rate if spec else None
  scaling = Scaling(tokens,
                    (config.subsample, config.subsample * subsample_factor),
                    (given, given * rate_factor) if spec else None)
  if tokens <= SMALL_TOKENS:  # the factors are 1: the config as it is
    return config, scaling
  scaled = config.replace(subsample=scaling.subsample[1])
  if spec:
    scaled = scaled.replace(embedding_spec=_with_learning_rate(
        spec, scaling.learning_rate[1]).to_json())
  return scaled, scaling


def summary_line(recorded: Optional[Dict[str, Any]]) -> str:
  """The run summary's line for the Model's `corpus_scaling` metadata; ''
  when the rule did not apply."""
  if not recorded:
    return ''
  head = f'corpus scaling: {recorded["tokens"]:,} training tokens'
  if recorded['tokens'] <= SMALL_TOKENS:
    return (f'{head}, up to {SMALL_TOKENS:,}: learning rate and subsample '
            'as set')
  parts = []
  if recorded.get('learning_rate'):
    given, applied = recorded['learning_rate']
    parts.append(f'learning rate {given:g} -> {applied:.3g}')
  given, applied = recorded['subsample']
  parts.append(f'subsample {given:g} -> {applied:.3g}')
  return (f'{head}: {", ".join(parts)} ({CORPUS_SCALING}=false keeps them '
          'as set)')
