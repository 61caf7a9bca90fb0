"""A few raw inputs for every signature of a serving model.

They build the model's variables before a restore is checked, warm TF
Serving up (`assets.extra/tf_serving_warmup_requests`) and are the canary
the exports must answer as the restored model does. A string input gets
bags of the first tokens of its feature's vocabulary, one token, and an
empty bag (every token unknown: a zero activation); a number input 0, 1, 2.
"""

from typing import Dict, Mapping

import numpy as np
import tensorflow as tf

from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.models import served

ROWS = 3


def raw_inputs(signature: served.Signature, ctx) -> Dict[str, np.ndarray]:
  """{input: [ROWS] values} for one signature's raw-feature inputs."""
  found = {}
  for name, spec in signature.specs.items():
    if spec.dtype != tf.string:
      found[name] = np.arange(ROWS).astype(spec.dtype.as_numpy_dtype)
      continue
    tokens = list(ctx.vocabulary(ctx.features[name]).tokens[:2]) if (
        name in ctx.features) else ['a', 'b']
    found[name] = np.array([' '.join(tokens), tokens[0], ''], dtype=object)
  return found


def serialized_examples(raw: Mapping[str, np.ndarray],
                        kinds: Mapping[str, str]) -> np.ndarray:
  """tf.Examples holding `raw` (a bag's tokens as bytes values, numbers as
  int64), serialized: the input of the `examples` signature."""
  records = []
  for row in range(len(next(iter(raw.values())))):
    feature = {}
    for name, values in raw.items():
      value = values[row]
      if kinds.get(name) == raw_features.INT64 or not isinstance(
          value, (str, bytes)):
        feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(
            value=[int(t) for t in str(value).split()]))
      else:
        feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[t.encode('utf-8') for t in str(value).split()]))
    records.append(tf.train.Example(features=tf.train.Features(
        feature=feature)).SerializeToString())
  return np.array(records, dtype=object)


def for_signatures(signatures: Mapping[str, served.Signature], ctx,
                   default: str, examples: str
                   ) -> Dict[str, Dict[str, np.ndarray]]:
  """{signature: inputs} of every signature; `examples` gets the default
  signature's raw inputs as serialized tf.Examples."""
  found = {name: raw_inputs(s, ctx) for name, s in signatures.items()
           if name != examples}
  if examples in signatures:
    found[examples] = {signatures[examples].inputs[0]: serialized_examples(
        found[default], ctx.feature_kinds)}
  return found
