"""Every channel, parameter and property key of the components, once.

Plain strings, imported from nowhere that loads TensorFlow, so the pipeline
definition, the Kubeflow compiler and the executors share them without
importing it (as TFX's `standard_component_specs.py` does for its own
components).
"""

from tpu_embeddings.core import splits

# Channels: the inputs and outputs of the components.
EXAMPLES = 'examples'
VOCABULARY = 'vocabulary'
BASE_MODEL = 'base_model'
MODEL = 'model'
MODEL_RUN = 'model_run'
BLESSING = 'blessing'
MODEL_BLESSING = 'model_blessing'
SERVING_MODEL = 'serving_model'
HUB_MODULE = 'hub_module'
PUSHED_SERVING = 'pushed_serving'
PUSHED_HUB = 'pushed_hub'

# Execution parameters besides each component's one `config` JSON
# (tpu_embeddings.core.settings.CONFIG_KEY).
PUSH_ROOT = 'push_root'    # the push root: baseline, warm start, destination
RESUME_ROOT = 'resume_root'  # the trainer's folder of resume pointers
# The validator: the served version when the run started (the local
# runner's key of tpu_embeddings.push_root.served.identity), so that a cached
# verdict is reused only while the same version is served.
SERVED_BASELINE = 'served_baseline'
SPAN_WINDOW = 'span_window'  # corpus ExampleGen: how many spans it reads
PATTERN = 'pattern'          # corpus ExampleGen: file pattern inside a span
FOLLOW_SYMLINKS = 'follow_symlinks'  # corpus ExampleGen: read symlinked files
# Trainer: the module file as its user gave it, once it was packaged as a
# wheel (`module_path`), to name it in errors.
MODULE_SOURCE_FILE = 'module_source_file'
# Examples: lines capped at MAX_TOKENS_PER_LINE, tokens over MAX_TOKEN_BYTES
# dropped, and the first file that had either.
CAPPED_LINES = 'capped_lines'
DROPPED_LONG_TOKENS = 'dropped_long_tokens'
FIRST_SKIPPING_FILE = 'first_skipping_file'
# Vocabulary of a module's FEATURES: {feature: records of the counted split
# where it holds no token (an empty CSV cell)}, as JSON.
EMPTY_IDS = 'empty_ids'

# Example splits (defined with the Examples' layout).
TRAIN_SPLIT = splits.TRAIN_SPLIT
EVAL_SPLIT = splits.EVAL_SPLIT

# Artifact properties, with the names stock TFX components use where they
# mean the same (Examples' `span`, a blessing's `blessed`, `current_model`,
# `current_model_id`, a PushedModel's `pushed`, `pushed_destination`,
# `pushed_version`).
SPAN = 'span'
BLESSED = 'blessed'
CURRENT_MODEL = 'current_model'
CURRENT_MODEL_ID = 'current_model_id'
BASELINE_MODEL = 'baseline_model'
BLESSING_MESSAGE = 'blessing_message'
SOURCE_MODEL = 'source_model'
EXPORTED = 'exported'
# The exporter's settings its exports were made with (ExporterConfig JSON).
EXPORT_CONFIG = 'export_config'
# A pusher that published nothing: the version already serving its exports.
ALREADY_SERVED = 'already_served_version'
PUSHED = 'pushed'
PUSHED_DESTINATION = 'pushed_destination'
PUSHED_VERSION = 'pushed_version'

# The validator's report.json: the served version it validated against
# (served.identity), which the pusher compares with the one served then.
VALIDATED_AGAINST = 'validated_against'
