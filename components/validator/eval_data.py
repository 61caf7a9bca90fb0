"""What the candidate and the baseline are scored on, and how.

Both tables are aligned to the evaluation vocabulary and scored by the same
code on the same (target, context, negatives) pairs, drawn with the skip-gram
settings the candidate was trained with (`trainer_config` in its metadata).
"""

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from components.validator import eval_files
from components.validator import metrics
from components.validator.config import ValidatorConfig
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models import frequency_model
from tpu_embeddings.models import heldout
from tpu_embeddings.models.skipgram_config import SkipGramConfig

EVAL_SPLIT = heldout.EVAL_SPLIT


@dataclasses.dataclass
class EvalData:
  """Everything both models are scored on."""
  tokens: List[str]
  ids: Dict[str, int]
  pairs: heldout.EvalPairs
  recall_rows: np.ndarray
  similarity: Optional[List[Tuple[str, str, float]]]
  related: Optional[List[Tuple[str, str]]]
  analogies: Optional[List[Tuple[str, str, str, str]]] = None
  counts: Optional[List[int]] = None


def trained_skipgram(model_uri: str) -> SkipGramConfig:
  """The skip-gram settings in the model's metadata; defaults without them."""
  meta = {}
  try:
    meta = model_layout.read_metadata(model_uri) or {}
  except (ValueError, tf.errors.OpError):
    pass  # An unreadable metadata file is reported by the restore gate.
  trained = meta.get(model_layout.TRAINER_CONFIG_KEY) or {}
  return SkipGramConfig.from_dict(
      {name: trained[name] for name in SkipGramConfig.names()
       if name in trained})


def load(examples_uri: str, vocabulary_uri: str, config: ValidatorConfig,
         skipgram: SkipGramConfig) -> EvalData:
  """Reads the eval split and the optional files; one-line error if unusable."""
  vocab = vocabulary_file.read(vocabulary_uri)
  similarity = (eval_files.read_similarity_file(config.similarity_file)
                if config.similarity_file else None)
  related = (eval_files.read_related_pairs(config.related_pairs_file)
             if config.related_pairs_file else None)
  analogies = (eval_files.read_analogy_file(config.analogy_file)
               if config.analogy_file else None)
  pairs = heldout.read_pairs([examples_uri], vocab.tokens, vocab.counts,
                             skipgram, config.max_eval_examples, config.seed)
  if pairs.targets.size == 0:
    raise ValueError(
        f'examples {examples_uri}: split {EVAL_SPLIT!r} gives no skip-gram '
        f'pairs ({pairs.sequences} sequences read, {pairs.oov_tokens} tokens '
        f'not in the vocabulary {vocabulary_uri}); check the eval data')
  rows = np.arange(pairs.targets.size)
  if rows.size > config.max_recall_queries:
    rng = np.random.default_rng(config.seed + 1)
    rows = np.sort(rng.choice(rows.size, config.max_recall_queries,
                              replace=False))
  return EvalData(list(vocab.tokens), vocab.ids, pairs, rows, similarity,
                  related, analogies, list(vocab.counts))


def frequency(data: EvalData, skipgram: SkipGramConfig) -> Dict[str, Any]:
  """The held-out loss of the best model knowing only token counts."""
  p = data.pairs
  return {'eval_loss': frequency_model.heldout_loss(
      data.counts, p.contexts, p.negatives, skipgram.subsample)}


def popularity(data: EvalData, k: int) -> Dict[str, Any]:
  """The figures of ranking tokens by frequency, scored like a table."""
  p = data.pairs
  return {'recall_at_k': metrics.popularity_recall_at_k(
      p.targets[data.recall_rows], p.contexts[data.recall_rows], k)}


def quality(model_tokens: List[str], table: np.ndarray, data: EvalData,
            k: int, output_table: Optional[np.ndarray] = None
           ) -> Dict[str, Any]:
  """Quality metrics of one model's table on `data` (same code for both).

  `output_table`: the model's contexts table, which only the held-out loss
  reads (None: tied vectors, the loss reads `table` for both sides).
  """
  aligned = metrics.align_table(model_tokens, table, data.tokens)
  aligned_output = (None if output_table is None else
                    metrics.align_table(model_tokens, output_table,
                                        data.tokens))
  p = data.pairs
  out = {
      'eval_loss': heldout.skipgram_loss(aligned, p.targets, p.contexts,
                                         p.negatives, aligned_output),
      'recall_at_k': metrics.recall_at_k(aligned, p.targets[data.recall_rows],
                                         p.contexts[data.recall_rows], k),
      'eval_vocabulary_coverage': float(
          np.mean(metrics.row_norms(aligned) > metrics.ZERO_NORM)),
  }
  if data.similarity is not None:
    sim = metrics.similarity_spearman(aligned, data.ids, data.similarity)
    out['spearman'] = sim['spearman']
    out['similarity_covered_pairs'] = sim['covered_pairs']
  if data.related is not None:
    rel = metrics.related_recall_at_k(aligned, data.ids, data.related, k)
    out['related_recall_at_k'] = rel['recall_at_k']
    out['related_covered_pairs'] = rel['covered_pairs']
  if data.analogies is not None:
    ana = metrics.analogy_accuracy(aligned, data.ids, data.analogies)
    out['analogy_accuracy'] = ana['analogy_accuracy']
    out['analogy_covered_questions'] = ana['covered_questions']
  return out
