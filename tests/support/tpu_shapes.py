"""What TPUEmbedding's own enqueue rules make of a batch, without a TPU."""

from typing import Dict, List, Tuple

import tensorflow as tf

from tpu_embeddings.training import tpu_adapter

Shapes = Dict[str, List[int]]


def enqueue_shapes(spec, ids) -> Tuple[Shapes, Shapes]:
  """({feature: input shape}, {feature: activation shape}) that
  `TPUEmbedding.enqueue` gives the global batch `ids` of `spec`'s features,
  as the adapter enqueues them (`tpu_adapter.tpu_features`)."""
  embedding = tf.tpu.experimental.embedding.TPUEmbedding(
      spec.build_feature_config(), spec.build_optimizer())
  features = tpu_adapter.tpu_features(ids)
  inputs = embedding._get_input_shapes(
      features, per_replica=False, in_tpu_context=True)
  outputs = embedding._get_output_shapes_from_input_shapes(inputs)
  names = sorted(features)  # nest order of the feature dict
  dims = {f.name: spec.table(f.table).dim for f in spec.features}
  return ({n: s.as_list() for n, s in zip(names, inputs)},
          {n: s.as_list() + [dims[n]] for n, s in zip(names, outputs)})


def per_replica(ids, replicas: int) -> Shapes:
  """`tpu_adapter.per_replica_input_shapes` of the batch `ids`."""
  specs = {n: (tf.RaggedTensorSpec.from_value(t)
               if isinstance(t, tf.RaggedTensor) else
               tf.TensorSpec.from_tensor(t)) for n, t in ids.items()}
  return {n: s.as_list() for n, s in
          tpu_adapter.per_replica_input_shapes(specs, replicas).items()}
