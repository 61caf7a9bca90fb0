"""Packaging a module file as a wheel, as TFX packages a Trainer's, but the
file alone.

TFX's `udf_utils.add_user_module_dependency` packages every `*.py` beside the
module file (a project folder's scripts, a stray file with credentials), and
ships them to the pipeline root. `add_module_file_wheel` packages the module
file only: it is copied into an empty folder and that folder is packaged
with TFX's own `package_user_module_file`, so the wheel and the
`module_path` the task imports it by are TFX's.

Resolved when a runner compiles the pipeline for Kubeflow (or TFX's own
runners); the local runner compiles the IR itself and reads the module file
where it is. The trainer then gets `module_path` in place of `module_file`,
and `keys.MODULE_SOURCE_FILE`, the path its user gave, to name in errors.
"""

import contextlib
import os
import tempfile

from tfx.components.util import udf_utils
from tfx.dsl.components.base import base_component
from tfx.dsl.io import fileio

from components import keys
from components import module_file as module_file_lib


@contextlib.contextmanager
def _temporary_files_in(directory: str):
  """`tempfile`'s default folder is `directory` inside the block: TFX's wheel
  build makes three folders with `tempfile.mkdtemp()` (sources, build, wheel)
  and removes none, so every compile would leave them behind."""
  before = tempfile.tempdir
  tempfile.tempdir = directory
  try:
    yield
  finally:
    tempfile.tempdir = before


class ModuleFileWheel(base_component._PipDependencyFuture):
  """A component's module file, packaged alone when the pipeline is
  compiled."""

  def __init__(self, component: base_component.BaseComponent):
    self.component = component

  def resolve(self, pipeline_root: str):
    """Builds the wheel under `<pipeline_root>/_wheels/`; its path."""
    properties = self.component.exec_properties
    source = properties.get(module_file_lib.MODULE_FILE_KEY)
    if not source or not isinstance(source, str) or not pipeline_root:
      return None
    if not fileio.exists(source):
      raise ValueError(f'module file {source}: no such file')
    if not fileio.exists(pipeline_root):
      fileio.makedirs(pipeline_root)
    with tempfile.TemporaryDirectory(prefix='module-file-') as alone, \
        tempfile.TemporaryDirectory(prefix='module-wheel-') as build:
      copy = os.path.join(alone, os.path.basename(source))
      fileio.copy(source, copy)
      with _temporary_files_in(build):
        wheel, module_path = udf_utils.package_user_module_file(
            self.component.id, copy, pipeline_root)
    properties[module_file_lib.MODULE_PATH_KEY] = module_path
    properties[module_file_lib.MODULE_FILE_KEY] = None
    properties[keys.MODULE_SOURCE_FILE] = source
    return wheel


def add_module_file_wheel(component: base_component.BaseComponent):
  """Ships `component`'s module file, alone, as a wheel (module docstring)."""
  component._add_pip_dependency(ModuleFileWheel(component))
