"""The skip-gram loss on activations, and its gradients derived by hand.

Shared by both adapters and the held-out scores: the CPU adapter and the TPU
adapter see the same activations (`target [B, D]`, `context [B, D]`,
`negatives [N, S, D]`, see skipgram.py) and take the same loss of them.
"""

from typing import Dict, Tuple

import tensorflow as tf

from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE


def _scores(target, context, negatives):
  """(t.c [B], t.n [B, S]): the logits of the pairs and of their negatives.

  `negatives` is [N, S, D] with N dividing B: pair b scores row b // (B/N)
  (N == B: each pair its own negatives; N < B: shared by groups of pairs).
  """
  pos = tf.reduce_sum(target * context, axis=-1)
  if _per_pair(target, negatives):
    # Batched matmuls, not einsum: einsum's [B] tiny products are the slower
    # CPU kernel (XLA lowers both to the same dot on TPU).
    neg = tf.squeeze(tf.matmul(negatives, target[:, :, None]), -1)
  else:
    neg = tf.reshape(tf.matmul(_grouped(target, negatives), negatives,
                               transpose_b=True), [-1, negatives.shape[1]])
  return pos, neg


def _per_pair(target, negatives) -> bool:
  """Whether each pair has its own negatives (N == B), from static shapes."""
  groups, batch = negatives.shape[0], target.shape[0]
  if groups is None or batch is None:
    raise ValueError('skip-gram: the batch and negatives need static batch '
                     f'dimensions, got {target.shape} and {negatives.shape}')
  if batch % groups:
    raise ValueError(f'skip-gram: negatives for {groups} groups of pairs do '
                     f'not divide the batch of {batch} pairs')
  return groups == batch


def _grouped(values, negatives):
  """[B, ...] -> [N, B/N, ...], the pairs of each group of shared negatives."""
  groups = negatives.shape[0]
  return tf.reshape(values, [groups, -1] + values.shape[1:].as_list())


def _loss_of_scores(pos, neg, scale, negative_weight):
  return (tf.reduce_sum(tf.nn.softplus(-pos)) +
          negative_weight * tf.reduce_sum(tf.nn.softplus(neg))) * scale


def loss(target: tf.Tensor, context: tf.Tensor, negatives: tf.Tensor,
         global_batch_size, negative_weight: float = 1.0) -> tf.Tensor:
  """The loss of `loss_and_gradients`, for automatic differentiation."""
  scale = 1.0 / tf.cast(global_batch_size, target.dtype)
  return _loss_of_scores(*_scores(target, context, negatives), scale,
                         negative_weight)


def loss_and_gradients(target: tf.Tensor, context: tf.Tensor,
                       negatives: tf.Tensor, global_batch_size,
                       negative_weight: float = 1.0
                      ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
  """Negative-sampling loss and its gradients w.r.t. the activations.

  loss = sum_b [softplus(-t_b.c_b) + w sum_s softplus(t_b.n_{g(b)s})]
         / global_batch

  Args:
    target: [B, D] activations of the targets.
    context: [B, D] activations of the contexts.
    negatives: [N, S, D] activations of the negatives, N dividing B: pair b
      is in group g(b) = b // (B/N). N == B gives each pair its own S = K
      negatives; N < B shares S negatives among each group's B/N pairs.
    global_batch_size: divisor of the summed loss (the global batch on TPU,
      where each replica holds B = global / replicas pairs).
    negative_weight: w, the weight of the negatives' term (K/S when shared,
      so the loss keeps the scale of K negatives per pair).

  Returns:
    (this replica's share of the loss, {feature: gradient}) with gradients
    shaped like the activations, as `TPUEmbedding.apply_gradients` expects.
  """
  scale = 1.0 / tf.cast(global_batch_size, target.dtype)
  pos, neg = _scores(target, context, negatives)
  loss_value = _loss_of_scores(pos, neg, scale, negative_weight)
  d_pos = (tf.sigmoid(pos) - 1.0) * scale                       # dL/dpos
  d_neg = tf.sigmoid(neg) * (scale * negative_weight)           # dL/dneg
  d_context = d_pos[:, None] * target
  if _per_pair(target, negatives):
    d_target = (d_pos[:, None] * context +
                tf.squeeze(tf.matmul(d_neg[:, None, :], negatives), 1))
    d_negatives = d_neg[:, :, None] * target[:, None, :]
  else:
    d_grouped = _grouped(d_neg, negatives)                      # [N, G, S]
    d_target = d_pos[:, None] * context + tf.reshape(
        tf.matmul(d_grouped, negatives), tf.shape(target))
    d_negatives = tf.matmul(d_grouped, _grouped(target, negatives),
                            transpose_a=True)                   # [N, S, D]
  return loss_value, {TARGET_FEATURE: d_target, CONTEXT_FEATURE: d_context,
                      NEGATIVES_FEATURE: d_negatives}
