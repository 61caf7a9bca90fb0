"""Loading a model's module file with TFX's udf utilities.

The trainer takes TFX's `module_file` (a path) or, on Kubeflow, the
`module_path` that `udf_utils.add_user_module_dependency` puts in its place
(the module packaged as a wheel beside the pipeline root), and loads it with
`udf_utils.get_fn`, as TFX's Trainer, Transform and Tuner load theirs.
Without either, the model is the built-in skip-gram.

The trainer copies the module's source into its Model
(`<model>/user_module.py`, SHA-256 in `metadata.json`:
tpu_embeddings/models/module_files.py), and the validator and
the exporter load that copy: every model, a pushed baseline included, is
read with the code it was trained with, whatever the pipeline's module file
says today. Errors name the module file as its user gave it: the trainer's
`module_file` (on Kubeflow, `keys.MODULE_SOURCE_FILE`, set when the file
was packaged), recorded in `metadata.json` for the copy's readers.
"""

import hashlib
import sys
from typing import Any, Mapping

import tensorflow as tf
from tfx.components.util import udf_utils

from components import keys
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import module_files
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.models.user_code import UserCodeError
from tpu_embeddings.models.user_code import raised

# TFX's execution-property keys (tfx.types.standard_component_specs).
MODULE_FILE_KEY = 'module_file'
MODULE_PATH_KEY = 'module_path'
# The name every module file defines, fetched to import it.
_ANCHOR = 'embedding_spec'


def _source_of(module) -> str:
  path = getattr(module, '__file__', None) or module.__spec__.origin
  with tf.io.gfile.GFile(path) as f:
    return f.read()


def _load(properties: Mapping[str, Any], where: str) -> ModelModule:
  """The module `properties` name; `where` is the module file as its user
  gave it, named in every error."""
  try:
    anchor = udf_utils.get_fn(dict(properties), _ANCHOR)
  except AttributeError as e:
    if getattr(e, 'name', None) != _ANCHOR:  # raised by the module's code
      raise UserCodeError(where, 'top-level code', raised(e)) from e
    raise ModelModuleError(f'module file {where}: {_ANCHOR}: is missing (a '
                           'module file defines the model: see the README)'
                           ) from e
  except (ImportError, OSError, SyntaxError) as e:
    raise ModelModuleError(f'module file {where} cannot be imported '
                           f'({type(e).__name__}: {e})') from e
  except Exception as e:
    raise UserCodeError(where, 'top-level code', raised(e)) from e
  module = sys.modules[anchor.__module__]
  return ModelModule(module, path=where, source=_source_of(module))


def from_exec_properties(properties: Mapping[str, Any]) -> ModelModule:
  """The trainer's module: `module_file` / `module_path`, else skip-gram."""
  where = (properties.get(MODULE_FILE_KEY) or
           properties.get(MODULE_PATH_KEY) or '')
  if not where:
    return module_files.builtin()
  if properties.get(MODULE_FILE_KEY) and not tf.io.gfile.exists(where):
    raise ModelModuleError(f'module file {where}: no such file')
  return _load({k: properties.get(k) for k in (MODULE_FILE_KEY,
                                               MODULE_PATH_KEY)},
               properties.get(keys.MODULE_SOURCE_FILE) or where)


def from_model(model_uri: str) -> ModelModule:
  """The module a Model was trained with (its `user_module.py`, checked
  against the SHA-256 of its metadata), or skip-gram for a Model without
  one (every Model written before module files). Its errors name the module
  file the trainer recorded (the copy, for Models that recorded none)."""
  path = module_files.user_module_path(model_uri)
  if not tf.io.gfile.exists(path):
    return module_files.builtin()
  with tf.io.gfile.GFile(path, 'rb') as f:
    digest = hashlib.sha256(f.read()).hexdigest()
  meta = model_layout.read_metadata(model_uri) or {}
  recorded = meta.get(model_layout.USER_MODULE_SHA256_KEY)
  if recorded and recorded != digest:
    raise ModelModuleError(
        f'module file {path}: its SHA-256 {digest[:12]}... differs from the '
        f'{recorded[:12]}... the trainer recorded; the Model was modified')
  return _load({MODULE_FILE_KEY: path},
               meta.get(model_layout.USER_MODULE_FILE_KEY) or path)
