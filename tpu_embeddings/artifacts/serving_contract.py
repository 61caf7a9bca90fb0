"""Names the exports are served under: signatures, their keys, their files.

`tpu_embeddings.exports` writes the serving SavedModel and the TF1 Hub module
under these names; the load check, the validator's baseline and
`tpu_embeddings.push_root.consumer` call them by these names. Plain strings:
importing this module imports no TensorFlow.

Serving SavedModel of a table (`tpu_embeddings.exports.table_serving`):
  SERVING_DEFAULT  SENTENCES -> EMBEDDINGS
  LOOKUP           TOKENS -> EMBEDDINGS
  NEIGHBORS        TOKENS, K -> TOKENS, SCORES

TF1 Hub module of a table (`tpu_embeddings.exports.table_hub`):
  HUB_DEFAULT      SENTENCES -> HUB_OUTPUT
  HUB_TOKENS       TOKENS -> HUB_OUTPUT
"""

from tpu_embeddings.artifacts import vocabulary_file

# Signatures of the serving SavedModel; SERVING_DEFAULT is the one TF Serving
# answers when a request names none.
SERVING_DEFAULT = 'serving_default'
LOOKUP = 'lookup'
NEIGHBORS = 'neighbors'
SIGNATURES = (SERVING_DEFAULT, LOOKUP, NEIGHBORS)

# Input and output keys of the serving signatures.
SENTENCES = 'sentences'
TOKENS = 'tokens'
K = 'k'
EMBEDDINGS = 'embeddings'
SCORES = 'scores'

# Signatures of the TF1 Hub module (inputs SENTENCES and TOKENS), and the
# output key of both.
HUB_DEFAULT = 'default'
HUB_TOKENS = 'tokens'
HUB_SIGNATURES = (HUB_DEFAULT, HUB_TOKENS)
HUB_OUTPUT = 'default'

# Where a `Model` artifact holds its serving SavedModel, relative to its URI:
# TFX's layout (`tfx.utils.path_constants.SERVING_MODEL_DIR`), so that
# `tfx.utils.path_utils.serving_model_path(uri)` and the stock Pusher,
# Evaluator and InfraValidator find it.
SERVING_MODEL_DIR = 'Format-Serving'


def serving_model_path(model_uri: str) -> str:
  """The SavedModel directory of the exporter's `serving_model` artifact."""
  return model_uri.rstrip('/') + '/' + SERVING_MODEL_DIR


def neighbors_queries(inputs) -> list:
  """A `neighbors` signature's query inputs: every input but K. A model's
  own `neighbors` takes exactly one (a token or an id)."""
  return sorted(set(inputs) - {K})


def neighbors_answers(outputs) -> list:
  """A `neighbors` signature's answer outputs: every output but SCORES. A
  model's own `neighbors` gives SCORES and exactly one of them."""
  return [o for o in outputs if o != SCORES]


# Files, relative to an export's directory. Both exports ship the vocabulary
# as ASSETS_DIR/TOKENS_ASSET_FILENAME, one token per line, line i = row i.
ASSETS_DIR = 'assets'
TOKENS_ASSET_FILENAME = vocabulary_file.TOKENS_ASSET_FILENAME
HUB_MODULE_FILENAME = 'tfhub_module.pb'
# TF Serving's warm-up requests (`tpu_embeddings.exports.warmup`).
WARMUP_DIR = 'assets.extra'
WARMUP_FILENAME = 'tf_serving_warmup_requests'
