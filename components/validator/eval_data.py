"""What the candidate and the baseline are scored on, and how.

Both tables are aligned to the evaluation vocabulary and scored by the same
code on the same (target, context, negatives) pairs, drawn with the skip-gram
settings the candidate was trained with (`trainer_config` in its metadata).

The evaluation vocabulary is held compactly (`CompactVocabulary`: no Python
object per token), and `ids` holds only the words of the optional files, so
a vocabulary of millions of tokens costs tens of bytes per token.
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from components.validator import eval_files
from components.validator import metrics
from components.validator.config import ValidatorConfig
from tpu_embeddings.artifacts import compact_vocabulary
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models import frequency_model
from tpu_embeddings.models import heldout
from tpu_embeddings.models.skipgram_config import SkipGramConfig

EVAL_SPLIT = heldout.EVAL_SPLIT


@dataclasses.dataclass
class EvalData:
  """Everything both models are scored on.

  `tokens`: the evaluation vocabulary in row order; `ids`: {word: row} of
  the words of the similarity, related-pairs and analogy files that are
  tokens, as written or lower-cased.
  """
  tokens: Sequence[str]
  ids: Dict[str, int]
  pairs: heldout.EvalPairs
  recall_rows: np.ndarray
  similarity: Optional[List[Tuple[str, str, float]]]
  related: Optional[List[Tuple[str, str]]]
  analogies: Optional[List[Tuple[str, str, str, str]]] = None
  counts: Optional[np.ndarray] = None


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
  vocab = compact_vocabulary.CompactVocabulary.read(vocabulary_uri)
  similarity = (eval_files.read_similarity_file(config.similarity_file)
                if config.similarity_file else None)
  related = (eval_files.read_related_pairs(config.related_pairs_file)
             if config.related_pairs_file else None)
  analogies = (eval_files.read_analogy_file(config.analogy_file)
               if config.analogy_file else None)
  pairs = heldout.read_pairs([examples_uri], vocab, vocab.counts,
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
  words = [w for found in (similarity or [], related or [], analogies or [])
           for row in found for w in row if isinstance(w, str)]
  ids = vocab.ids_of(words + [w.lower() for w in words])
  return EvalData(vocab, ids, pairs, rows, similarity, related, analogies,
                  vocab.counts)


def model_tokens(model_uri: str, vocabulary_uri: str,
                 data: EvalData) -> Sequence[str]:
  """The tokens of the Model's own vocabulary.tsv: `data.tokens` itself
  when the file is the Vocabulary artifact's (the trainer copies it), so
  their tables need no alignment and no second vocabulary is held."""
  if vocabulary_file.same_files(model_uri, vocabulary_uri):
    return data.tokens
  return compact_vocabulary.CompactVocabulary.read(model_uri)


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


def recall_hits(aligned: np.ndarray, data: EvalData, k: int) -> np.ndarray:
  """`metrics.recall_hits` of a table aligned to `data.tokens` on the
  recall pairs whose target is not their context."""
  p = data.pairs
  targets = p.targets[data.recall_rows]
  contexts = p.contexts[data.recall_rows]
  distinct = targets != contexts
  return metrics.recall_hits(aligned, targets[distinct], contexts[distinct],
                             k)


def quality(model_tokens: Sequence[str], table: np.ndarray, data: EvalData,
            k: int, output_table: Optional[np.ndarray] = None,
            hits: Optional[np.ndarray] = None) -> Dict[str, Any]:
  """Quality metrics of one model's table on `data` (same code for both).

  `output_table`: the model's contexts table, which only the held-out loss
  reads (None: tied vectors, the loss reads `table` for both sides).
  `hits`: `recall_hits` of the aligned table, if already computed.
  """
  aligned = metrics.align_table(model_tokens, table, data.tokens)
  aligned_output = (None if output_table is None else
                    metrics.align_table(model_tokens, output_table,
                                        data.tokens))
  p = data.pairs
  if hits is None:
    hits = recall_hits(aligned, data, k)
  out = {
      'eval_loss': heldout.skipgram_loss(aligned, p.targets, p.contexts,
                                         p.negatives, aligned_output),
      'recall_at_k': int(hits.sum()) / hits.size if hits.size else None,
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
