"""Package `__init__`s the CLI's process runs only once something needs them.

Importing any submodule runs its package's `__init__` first. A local run
imports a few submodules of packages whose `__init__` imports far more:

    tfx.components              every standard TFX component (BulkInferrer,
                                Evaluator, InfraValidator, Transform, ...),
                                and through them TFMA, TFDV, TF Transform,
                                the Docker and Kubernetes clients;
    tensorflow_model_analysis,  `tfx.types.standard_component_specs` reads
    tensorflow_data_validation  a proto module and `tfma.sdk` of each;
    docker                      TFX's launcher imports its container
                                executor, which a local run never uses;
    google.cloud.bigquery,      `apache_beam.io` imports Beam's GCP IOs,
    google.cloud.bigquery_storage_v1,  which import these clients (BigQuery
    google.cloud.pubsub,        also tqdm's notebook widgets and IPython).
    google.cloud.storage

Together about a second of every command that runs or compiles the pipeline.
`install()` makes the first import of each of these packages create it
without running its `__init__`: its submodules import as before, and the
first lookup of a name the package does not have yet (`tfma.EvalConfig`,
`from docker import DockerClient`) runs the `__init__`, then answers from it.
A process that uses one of them fully sees no difference but when the
`__init__` runs.
"""

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
from typing import Iterable

from pipelines.cli import wrapped_loader

DEFERRED = (
    'tfx.components',
    'tensorflow_model_analysis',
    'tensorflow_data_validation',
    'docker',
    'google.cloud.bigquery',
    'google.cloud.bigquery_storage_v1',
    'google.cloud.pubsub',
    'google.cloud.storage',
)


def _attribute(module, loader, name: str):
  """The module-level `__getattr__` of a package whose `__init__` has not
  run: its submodule `name`, else the `__init__` is run and asked."""
  try:
    return importlib.import_module(f'{module.__name__}.{name}')
  except ModuleNotFoundError as e:
    if e.name != f'{module.__name__}.{name}':
      raise
  del module.__getattr__
  loader.exec_module(module)
  return getattr(module, name)


class _DeferringLoader(wrapped_loader.WrappedLoader):
  """Creates the package as `loader` would, but leaves its `__init__` to
  `_attribute`."""

  def exec_module(self, module):
    self.hand_back(module)
    module.__getattr__ = functools.partial(_attribute, module, self.loader)


class DeferringFinder(importlib.abc.MetaPathFinder):
  """Finds the packages `names` like the path finder does, loading each with
  its `__init__` deferred."""

  def __init__(self, names: Iterable[str]):
    self.names = frozenset(names)

  def find_spec(self, fullname, path=None, target=None):
    if fullname not in self.names:
      return None
    spec = importlib.machinery.PathFinder.find_spec(fullname, path)
    if (spec is not None and spec.loader is not None and spec.has_location
        and spec.submodule_search_locations is not None):
      spec.loader = _DeferringLoader(spec.loader)
    return spec


def install(names: Iterable[str] = DEFERRED) -> DeferringFinder:
  """Defers the `__init__` of each package of `names` not imported yet;
  returns the finder, for `uninstall`."""
  finder = DeferringFinder(name for name in names if name not in sys.modules)
  sys.meta_path.insert(0, finder)
  return finder


def uninstall(finder: DeferringFinder):
  """Packages imported from now on run their `__init__` as usual."""
  if finder in sys.meta_path:
    sys.meta_path.remove(finder)
