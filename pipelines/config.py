"""PipelineConfig: the components' configs, composed; importable without TFX.

Each setting belongs to one component's config and has its default there.
From the command line a setting is named `section.field` (`trainer.window`)
or just `field`, which sets that field in every section that has one (only
`seed` is in two: trainer and validator).
"""

import dataclasses
import difflib
import json
import os
from typing import Any, Dict, List, Mapping, Tuple

from components.corpus_example_gen.config import ExampleGenConfig
from components.exporter.config import ExporterConfig
from components.pusher.config import PusherConfig
from components.vocabulary.config import VocabularyConfig
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training.config import TableConfig
from tpu_embeddings.training.config import TrainerConfig
from tpu_embeddings.validation.config import ValidatorConfig

PIPELINE_NAME = 'tpu-embeddings'

# (section, field) of the settings that name an input file.
LOCAL_INPUT_FILES = (('validator', 'related_pairs_file'),
                     ('validator', 'similarity_file'))


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
  """Every setting of the pipeline, one section per component."""
  example_gen: ExampleGenConfig = ExampleGenConfig()
  vocabulary: VocabularyConfig = VocabularyConfig()
  table: TableConfig = TableConfig()
  trainer: TrainerConfig = TrainerConfig()
  validator: ValidatorConfig = ValidatorConfig()
  exporter: ExporterConfig = ExporterConfig()
  pusher: PusherConfig = PusherConfig()

  def __post_init__(self):
    if self.trainer.embedding_spec and self.table != TableConfig():
      raise ValueError('pipeline config: set table.* or '
                       'trainer.embedding_spec, not both')

  @classmethod
  def sections(cls) -> Dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls)}

  def embedding_spec(self) -> EmbeddingSpec:
    return self.trainer_config().spec()

  def trainer_config(self) -> TrainerConfig:
    """The trainer's config, its embedding spec built from `table`."""
    if self.trainer.embedding_spec:
      return self.trainer
    return self.trainer.replace(
        embedding_spec=self.table.embedding_spec().to_json())

  def replace(self, **settings_by_name) -> 'PipelineConfig':
    """A copy with settings changed, named as in `from_dict`."""
    changes: Dict[str, Dict[str, Any]] = {}
    for name, value in settings_by_name.items():
      for section, field in _locate(name):
        changes.setdefault(section, {})[field] = value
    return dataclasses.replace(self, **{
        section: getattr(self, section).replace(**fields)
        for section, fields in changes.items()})

  @classmethod
  def located(cls, name: str) -> List[str]:
    """The settings ("section.field") that a name as in `from_dict` sets.
    """
    return [f'{section}.{field}' for section, field in _locate(name)]

  @classmethod
  def flat(cls, values: Mapping[str, Any]) -> Dict[str, Any]:
    """{"trainer": {"window": 5}} -> {"trainer.window": 5}; flat names
    ("trainer.window", "window") stay."""
    flat = {}
    for name, value in values.items():
      if name in cls.sections() and isinstance(value, dict):
        flat.update({f'{name}.{k}': v for k, v in value.items()})
      else:
        flat[name] = value
    return flat

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]) -> 'PipelineConfig':
    """From {"trainer": {"window": 5}}, {"trainer.window": 5} or {"window": 5}.
    """
    return cls().replace(**cls.flat(values))

  @classmethod
  def from_json(cls, text: str) -> 'PipelineConfig':
    return cls.from_dict(json.loads(text))

  def check_local_files(self):
    """Input files named by a local path must exist; before any component
    runs, not when the validator reads them after training. Remote ones
    (gs://...) are checked where the component runs."""
    for section, field in LOCAL_INPUT_FILES:
      path = getattr(getattr(self, section), field)
      if path and '://' not in path and not os.path.isfile(path):
        raise FileNotFoundError(f'{section}.{field} {path}: no such file')

  def to_dict(self) -> Dict[str, Dict[str, Any]]:
    return dataclasses.asdict(self)


def _locate(name: str) -> List[Tuple[str, str]]:
  """[(section, field)] a setting named `section.field` or `field` sets."""
  sections = PipelineConfig.sections()
  section, dot, field = name.rpartition('.')
  if dot:
    if section in sections and field in sections[section].names():
      return [(section, field)]
  else:
    owners = [(s, name) for s, c in sections.items() if name in c.names()]
    if owners:
      return owners
  known = sorted(f'{s}.{f}' for s, c in sections.items() for f in c.names())
  raise ValueError(f'pipeline config: unknown field {name!r}; '
                   f'{_closest(name, known)}fields are {", ".join(known)}')


def _closest(name: str, known: List[str]) -> str:
  """'did you mean ...? ' naming the known setting a wrong `name` is
  closest to: its field in another section (`trainer.dim`: `table.dim`),
  else the closest spelling of the whole name or of its field alone; ''
  when none is close."""
  section, _, field = name.rpartition('.')
  owners = [k for k in known if k.rpartition('.')[2] == field]
  if section and owners:
    found = owners
  else:
    found = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
  if not found:
    fields = {k.rpartition('.')[2]: k for k in known}
    found = [fields[f] for f in difflib.get_close_matches(
        field, list(fields), n=1, cutoff=0.8)]
  return (f'did you mean {" or ".join(map(repr, found))}? ' if found
          else '')
