"""TF Serving warm-up requests of the serving SavedModel.

    <export_dir>/assets.extra/tf_serving_warmup_requests

A TFRecord file of `tensorflow.serving.PredictionLog` records, one `Predict`
request per signature. TF Serving replays them when it loads a version, before
marking it AVAILABLE, so the first user request does not pay for the session's
first run of each signature.
"""

import os
from typing import Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_log_pb2

from tpu_embeddings.artifacts import serving_contract

# Neighbours asked for by the warm-up `neighbors` request (at most V - 1 are
# returned).
WARMUP_K = 10

Request = Tuple[str, Dict[str, np.ndarray]]


def warmup_path(export_dir: str) -> str:
  return os.path.join(export_dir, serving_contract.WARMUP_DIR,
                      serving_contract.WARMUP_FILENAME)


def requests_for(tokens: Sequence[str]) -> List[Request]:
  """`(signature, inputs)` of each warm-up request, from a few vocabulary
  tokens; an empty token and an empty sentence exercise the OOV paths."""
  tokens = list(tokens)
  if not tokens:
    raise ValueError('warm-up: needs at least one vocabulary token')
  as_array = lambda values: np.array([v.encode('utf-8') for v in values],
                                     dtype=object)
  sentences, tokens_key = serving_contract.SENTENCES, serving_contract.TOKENS
  return [
      (serving_contract.SERVING_DEFAULT,
       {sentences: as_array([' '.join(tokens), tokens[0], ''])}),
      (serving_contract.LOOKUP, {tokens_key: as_array(tokens)}),
      (serving_contract.LOOKUP, {tokens_key: as_array(tokens + [''])}),
      (serving_contract.NEIGHBORS,
       {tokens_key: as_array(tokens[:1]),
        serving_contract.K: np.array(WARMUP_K, np.int32)}),
  ]


def write(export_dir: str, requests: Sequence[Request]) -> str:
  """Writes `requests` as the export's warm-up file; returns its path."""
  path = warmup_path(export_dir)
  tf.io.gfile.makedirs(os.path.dirname(path))
  with tf.io.TFRecordWriter(path) as writer:
    for signature, inputs in requests:
      request = predict_pb2.PredictRequest()
      request.model_spec.signature_name = signature
      for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
      log = prediction_log_pb2.PredictionLog(
          predict_log=prediction_log_pb2.PredictLog(request=request))
      writer.write(log.SerializeToString())
  return path


def read(export_dir: str) -> List[Request]:
  """The export's warm-up requests, as `write` took them."""
  requests = []
  for record in tf.data.TFRecordDataset(warmup_path(export_dir)):
    log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
    request = log.predict_log.request
    requests.append((request.model_spec.signature_name,
                     {name: tf.make_ndarray(proto)
                      for name, proto in request.inputs.items()}))
  return requests
