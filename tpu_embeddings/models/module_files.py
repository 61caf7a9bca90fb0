"""The built-in model module, and a module file's copy in its Model.

The trainer copies a module file's source into its Model
(`<model>/user_module.py`, SHA-256 in `metadata.json`), so that every reader
of the Model loads the code it was trained with. Loading a module file is the
components' work (`components/module_file.py`, with TFX's udf utilities).
"""

from typing import Dict

import tensorflow as tf

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import skipgram_module
from tpu_embeddings.models.model_module import ModelModule


def builtin() -> ModelModule:
  """The built-in skip-gram model."""
  return ModelModule(skipgram_module)


def user_module_path(model_uri: str) -> str:
  return model_layout.join(model_uri, model_layout.USER_MODULE_FILENAME)


def write_to_model(module: ModelModule, model_uri: str) -> Dict[str, str]:
  """Copies a module's source into the Model; {metadata key: its SHA-256}.
  Nothing for the built-in skip-gram."""
  if module.builtin:
    return {}
  with tf.io.gfile.GFile(user_module_path(model_uri), 'w') as f:
    f.write(module.source)
  return {model_layout.USER_MODULE_SHA256_KEY: module.sha256}


def recorded(module: ModelModule) -> Dict[str, str]:
  """What metadata.json records of a module file: its SHA-256 and its path
  as the user gave it. Nothing for the built-in skip-gram."""
  if module.builtin:
    return {}
  return {model_layout.USER_MODULE_SHA256_KEY: module.sha256,
          model_layout.USER_MODULE_FILE_KEY: module.path}
