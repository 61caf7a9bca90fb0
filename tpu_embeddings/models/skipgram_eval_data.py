"""What skip-gram's evaluation scores every model on, and how.

Every model (candidate, pushed baseline) is scored by the same code on the
same (target, context, negatives) pairs of the eval split, drawn with the
skip-gram settings the candidate was trained with (`trainer_config` in its
metadata), on tables whose row i is the i-th token of the evaluation
vocabulary, the candidate's own (zeros for tokens a model does not know).

The evaluation vocabulary is held compactly (`CompactVocabulary`: no Python
object per token), and `ids` holds only the words of the optional files, so
a vocabulary of millions of tokens costs tens of bytes per token.
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import compact_vocabulary
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import frequency_model
from tpu_embeddings.models import heldout
from tpu_embeddings.models.skipgram_config import SkipGramConfig
from tpu_embeddings.quality import eval_files
from tpu_embeddings.quality import metrics

EVAL_SPLIT = heldout.EVAL_SPLIT


@dataclasses.dataclass
class EvalData:
  """Everything every model is scored on.

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


def compact(vocabulary) -> compact_vocabulary.CompactVocabulary:
  """`vocabulary` (a TokenCounts or a CompactVocabulary), compactly."""
  if isinstance(vocabulary, compact_vocabulary.CompactVocabulary):
    return vocabulary
  return compact_vocabulary.CompactVocabulary.from_tokens(vocabulary.tokens,
                                                          vocabulary.counts)


def load(examples_uris: Sequence[str], vocabulary, config: Any,
         skipgram: SkipGramConfig) -> EvalData:
  """Reads the eval split and the optional files; one-line error if unusable.

  `config`: the validator's settings (max_eval_examples, max_recall_queries,
  seed and the three optional files).
  """
  vocab = compact(vocabulary)
  similarity = (eval_files.read_similarity_file(config.similarity_file)
                if config.similarity_file else None)
  related = (eval_files.read_related_pairs(config.related_pairs_file)
             if config.related_pairs_file else None)
  analogies = (eval_files.read_analogy_file(config.analogy_file)
               if config.analogy_file else None)
  pairs = heldout.read_pairs(list(examples_uris), vocab, vocab.counts,
                             skipgram, config.max_eval_examples, config.seed)
  if pairs.targets.size == 0:
    raise ValueError(
        f'examples {", ".join(examples_uris)}: split {EVAL_SPLIT!r} gives no '
        f'skip-gram pairs ({pairs.sequences} sequences read, '
        f'{pairs.oov_tokens} tokens not in the vocabulary); check the eval '
        'data')
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


def recall_hits(table: np.ndarray, data: EvalData, k: int) -> np.ndarray:
  """`metrics.recall_hits` of a table of `data.tokens`' rows on the recall
  pairs whose target is not their context."""
  p = data.pairs
  targets = p.targets[data.recall_rows]
  contexts = p.contexts[data.recall_rows]
  distinct = targets != contexts
  return metrics.recall_hits(table, targets[distinct], contexts[distinct], k)


def quality(table: np.ndarray, data: EvalData, k: int,
            output_table: Optional[np.ndarray] = None,
            hits: Optional[np.ndarray] = None) -> Dict[str, Any]:
  """Quality metrics of one model's table (rows of `data.tokens`) on `data`.

  `output_table`: the model's contexts table, which only the held-out loss
  reads (None: tied vectors, the loss reads `table` for both sides).
  `hits`: `recall_hits` of the table, if already computed.
  """
  p = data.pairs
  if hits is None:
    hits = recall_hits(table, data, k)
  out = {
      'eval_loss': heldout.skipgram_loss(table, p.targets, p.contexts,
                                         p.negatives, output_table),
      'recall_at_k': int(hits.sum()) / hits.size if hits.size else None,
      'eval_vocabulary_coverage': float(
          np.mean(metrics.row_norms(table) > metrics.ZERO_NORM)),
  }
  if data.similarity is not None:
    sim = metrics.similarity_spearman(table, data.ids, data.similarity)
    out['spearman'] = sim['spearman']
    out['similarity_covered_pairs'] = sim['covered_pairs']
  if data.related is not None:
    rel = metrics.related_recall_at_k(table, data.ids, data.related, k)
    out['related_recall_at_k'] = rel['recall_at_k']
    out['related_covered_pairs'] = rel['covered_pairs']
  if data.analogies is not None:
    ana = metrics.analogy_accuracy(table, data.ids, data.analogies)
    out['analogy_accuracy'] = ana['analogy_accuracy']
    out['analogy_covered_questions'] = ana['covered_questions']
  return out
