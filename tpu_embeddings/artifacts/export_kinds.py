"""The export kinds: one row per kind of export a model is published as.

Every reader of exports takes a kind's facts from here: the exporter writes
one export per row (tpu_embeddings/exports), the load check checks each, the
pusher publishes one folder per row and the push root lays them out, checks
and serves them (tpu_embeddings/push_root). A row is

    name           the kind's folder under the push root (`<root>/<name>/<v>`),
                   the `kind` of its manifests, the key of its export
                   everywhere (`{name: directory}`)
    description    what the folder holds, named in errors
    marker         the file its loaders open first: copied last into a
                   pushed version, and its presence makes the folder one
    publish_order  kinds are moved into a pushed version in ascending order;
                   the last one is what TF Serving reads (`served()`), so a
                   version is seen only once every other kind is in place
    required       every complete version holds it (an optional kind may be
                   missing from a version without damaging it)
    artifact_dir   where the export sits in its output artifact ('' = the
                   artifact's URI itself)
    loader         `loader(directory)`: the export loaded in this process,
                   an object with `.signatures`
    checker        `checker(directory)`: why a directory that should hold an
                   export of this kind does not (empty when it does)

Adding a kind, e.g. an int8 copy of a table:

1. a format module in tpu_embeddings/exports that writes it, e.g.
   `table_int8.py`;
2. a row here (name 'int8', its marker, publish order before the served
   kind, required False while consumers do not need it);
3. its wiring, each keyed by the row's name: the writer in the sources'
   `writers` (tpu_embeddings/exports/table_source.py, module_source.py) and
   the check in the canaries' `CHECKS` (table_check.py, module_canary.py);
   the exporter's output channel (components/exporter/executor.py
   `OUTPUTS`) and the pusher's input and pushed channels
   (components/pusher/executor.py `CHANNELS`, and an argument of
   EmbeddingPusher), named in components/keys.py; both component specs
   follow these maps. The push root (layout, publish, integrity, status,
   retention, served) and the consumers follow the registry unchanged.

Plain data and lazy imports: importing this module imports no TensorFlow.
"""

import dataclasses
from typing import Any, Callable, List, Tuple

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.core import file_system


def _load_saved_model(directory: str) -> Any:
  import tensorflow as tf
  return tf.saved_model.load(directory)


def _load_hub_module(directory: str) -> Any:
  import tensorflow_hub as hub
  return hub.load(directory)


@dataclasses.dataclass(frozen=True)
class ExportKind:
  """One kind of export (module docstring)."""
  name: str
  description: str
  marker: str
  publish_order: int
  required: bool
  artifact_dir: str
  loader: Callable[[str], Any]

  def checker(self, directory: str, role: str = 'export') -> List[str]:
    """Why `directory` is not an export of this kind ([] when it is one);
    errors name it as the kind's `role` ('export', 'source')."""
    if not directory or not file_system.isdir(directory):
      return [f'{self.name} {role} {directory!r} is not a directory']
    if not file_system.exists(file_system.join(directory, self.marker)):
      return [f'{self.name} {role} {directory} has no {self.marker}; '
              f'expected a {self.description} directory']
    return []

  def artifact_path(self, artifact_uri: str) -> str:
    """The export's directory inside its output artifact."""
    if not self.artifact_dir:
      return artifact_uri
    return artifact_uri.rstrip('/') + '/' + self.artifact_dir


SERVING = ExportKind(
    name='serving',
    description='TF2 SavedModel',
    marker='saved_model.pb',
    publish_order=1,
    required=True,
    artifact_dir=serving_contract.SERVING_MODEL_DIR,
    loader=_load_saved_model)

HUB = ExportKind(
    name='hub',
    description='TF1 Hub module',
    marker=serving_contract.HUB_MODULE_FILENAME,
    publish_order=0,
    required=True,
    artifact_dir='',
    loader=_load_hub_module)

# The registry, in the order the exporter writes them.
KINDS: Tuple[ExportKind, ...] = (SERVING, HUB)
NAMES: Tuple[str, ...] = tuple(k.name for k in KINDS)


class UnknownKindError(ValueError):
  """A name that is no registered export kind."""


def get(name: str) -> ExportKind:
  """The row of kind `name`; UnknownKindError naming the known ones."""
  for kind in KINDS:
    if kind.name == name:
      return kind
  raise UnknownKindError(f'export kind {name!r} is not one of {NAMES}')


def publish_order() -> Tuple[str, ...]:
  """Kind names in the order they are moved into a pushed version."""
  return tuple(k.name for k in sorted(KINDS, key=lambda k: k.publish_order))


def served() -> str:
  """The kind TF Serving reads: published last, so its folder appearing
  means the version is complete; versions are listed and numbered by it."""
  return publish_order()[-1]


def required() -> Tuple[str, ...]:
  """Kind names every complete version holds."""
  return tuple(k.name for k in KINDS if k.required)
