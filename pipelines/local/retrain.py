"""Retraining trigger: run the pipeline when the data root holds a newer span.

The pushed model's manifest names the spans it was trained on and its source
`Model`; a newer span in the data root starts a run warm-started from that
model. A lock file in the home makes concurrent triggers safe: one runs, the
others say so and exit.
"""

import dataclasses
import glob
import os
import re
from typing import List, Optional, Sequence, Tuple

from pipelines.local import home_lock
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout

LOCK_FILENAME = '.retrain.lock'


@dataclasses.dataclass
class Decision:
  run: bool
  reason: str
  data_span: Optional[int] = None
  pushed_span: Optional[int] = None
  pushed_version: Optional[int] = None
  warm_start_uri: str = ''


def span_regex(pattern: str) -> re.Pattern:
  """`span-{SPAN}/*` -> a regex for the first path component with {SPAN}."""
  component = next((c for c in pattern.split('/') if '{SPAN' in c), None)
  if component is None:
    raise ValueError(f'input pattern {pattern!r} has no {{SPAN}}: retraining '
                     'needs span folders')
  parts = re.split(r'\{SPAN(?::\d+)?\}', component)
  return re.compile('^' + r'(\d+)'.join(re.escape(p) for p in parts) + '$')


def check_span_folders(data_root: str, pattern: str):
  """Raises for an entry of the data root named like a span folder whose
  span is not a number (`span-x`), which TFX's span resolution would stop
  on without naming the folder."""
  component = next((c for c in pattern.split('/') if '{SPAN' in c), None)
  if component is None:
    return
  prefix, _, rest = component.partition('{SPAN')
  suffix = rest.partition('}')[2]
  regex = span_regex(pattern)
  for name in sorted(os.listdir(data_root)):
    if (name.startswith(prefix) and name.endswith(suffix) and
        len(name) > len(prefix) + len(suffix) and not regex.match(name)):
      raise ValueError(
          f'data root {data_root}: {name!r} is named like a span folder '
          f'({component}) but {name[len(prefix):len(name) - len(suffix)]!r} '
          f'is not a span number; rename it (e.g. {prefix}3{suffix}) or move '
          'it out of the data root')


def span_files(data_root: str, patterns: Sequence[str]
               ) -> Optional[List[List[str]]]:
  """The files of each pattern (e.g. `span-{SPAN}/*`, or the stock formats'
  `span-{SPAN}/train/*` and `span-{SPAN}/eval/*`) in the newest span folder
  holding files of every one, the span ExampleGen reads; None without one."""
  root = glob.escape(data_root)
  component = next((c for c in patterns[0].split('/') if '{SPAN' in c), None)
  if component is None:
    found = [sorted(glob.glob(os.path.join(root, p))) for p in patterns]
    return found if all(found) else None
  regex = span_regex(patterns[0])
  spans = sorted(((int(m.group(1)), name) for name in os.listdir(data_root)
                  for m in [regex.match(name)] if m), reverse=True)
  for _, name in spans:
    found = [sorted(glob.glob(os.path.join(
        root, p.replace(component, glob.escape(name), 1)))) for p in patterns]
    if all(found):
      return found
  return None


def check_span_files(data_root: str, patterns: Sequence[str]):
  """Raises, naming the data root and its span folders, when no span folder
  holds files of every pattern (see span_files): TFX would stop naming the
  pattern alone."""
  if span_files(data_root, patterns) is not None:
    return
  shown = ' and '.join(patterns)
  component = next((c for c in patterns[0].split('/') if '{SPAN' in c), None)
  if component is None:
    raise ValueError(f'data root {data_root}: no file matches {shown}; '
                     'put the input files there')
  regex = span_regex(patterns[0])
  folders = sorted(n for n in os.listdir(data_root) if regex.match(n) and
                   os.path.isdir(os.path.join(data_root, n)))
  if not folders:
    first = re.sub(r'\{SPAN(?::\d+)?\}', '1', component)
    raise ValueError(f'data root {data_root} has no span folder '
                     f'({component}); put each span\'s files in one, e.g. '
                     f'{first}/')
  raise ValueError(
      f'data root {data_root}: no file matches {shown} in span folder'
      f'{"s" if len(folders) > 1 else ""} {", ".join(folders)}; put the '
      'span\'s files there, or remove the empty folder')


def _holds_files(path: str) -> bool:
  """A file in `path` or below (the stock formats' train/ and eval/)."""
  return any(files for _, _, files in os.walk(path))


def latest_data_span(data_root: str, pattern: str) -> Optional[int]:
  """Highest span folder that holds at least one file (in it, or in a
  folder of it)."""
  if not os.path.isdir(data_root):
    raise FileNotFoundError(f'data root {data_root} is not a directory')
  regex = span_regex(pattern)
  spans = []
  for name in os.listdir(data_root):
    m = regex.match(name)
    path = os.path.join(data_root, name)
    if m and os.path.isdir(path) and _holds_files(path):
      spans.append(int(m.group(1)))
  return max(spans) if spans else None


def decide(data_root: str, push_root: str, pattern: str) -> Decision:
  data_span = latest_data_span(data_root, pattern)
  if data_span is None:
    return Decision(False, f'no span folders with files in {data_root}')
  version = (push_layout.latest_version(push_root, push_layout.SERVED)
             if os.path.isdir(push_root) else None)
  if version is None:
    return Decision(True, f'nothing pushed yet; training on span {data_span}',
                    data_span=data_span)
  manifest = push_layout.read_manifest(push_root, push_layout.SERVED, version)
  pushed_span = max(manifest.get('spans') or [0])
  # Relative to this home: a copied home warm-starts from its own copy.
  source = home_paths.resolve(manifest.get('source_model', ''), push_root)
  warm = source if source and os.path.isdir(source) else ''
  if data_span <= pushed_span:
    return Decision(False, f'span {data_span} is not newer than the pushed '
                    f'version {version} (trained on span {pushed_span}); '
                    'nothing to do', data_span, pushed_span, version)
  reason = (f'span {data_span} is newer than pushed version {version} '
            f'(span {pushed_span}); retraining')
  reason += (f', warm start from {warm}' if warm else
             ', cold start (the pushed model\'s source is gone)')
  return Decision(True, reason, data_span, pushed_span, version, warm)


def planned_spec(config, module_file: str, base_uri: str):
  """The tables, dims and optimizer the run will train: the model's own
  `embedding_spec(ctx)` (skip-gram's from the settings, a module file's from
  its code), the base's vocabularies standing in for those the run counts
  (their sizes are not what a warm start compares)."""
  from pipelines import model_settings
  from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
  from tpu_embeddings.models.context import ModelContext
  module = model_settings.load(module_file)
  try:
    vocabularies = vocabularies_lib.read(base_uri) if base_uri else None
  except ValueError:
    vocabularies = None  # the trainer names what is wrong with the base
  settings = config.trainer_config()
  return module.embedding_spec(ModelContext(
      features=module.features, vocabularies=vocabularies, settings=settings,
      custom_config=dict(settings.custom_config), seed=settings.seed))


def choose_warm_start(decision: Decision, spec, from_pushed: bool
                      ) -> Tuple[str, str]:
  """(base model, note): the pushed model's source when it can seed a
  model with `spec` (an EmbeddingSpec, see planned_spec; None without a
  source), else '' and why the run starts cold (which it then does: see
  cold_start).

  `from_pushed` is `trainer.warm_start_from_pushed`: false asks for a cold
  start. A base whose tables or optimizer do not fit `spec` (another `dim`,
  tied vs a contexts table, another optimizer) cannot seed it: retraining
  then starts cold rather than failing.
  """
  if not decision.warm_start_uri:
    return '', ''
  tables = ', '.join(t.name for t in spec.tables)
  if not from_pushed:
    return '', (f'cold start of tables {tables}: '
                'trainer.warm_start_from_pushed=false (not warm-starting '
                f'from {decision.warm_start_uri})')
  from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
  from tpu_embeddings.training import warm_start
  base = decision.warm_start_uri
  try:
    warm_start.check_compatible(spec, EmbeddingSpec.load(base), base)
  except ValueError as e:
    return '', f'cold start of tables {tables}: {e}'
  return base, ''


def cold_start(config):
  """`config` for a run that retrain starts cold: without a base, the
  trainer would otherwise look for one among older pushed versions."""
  return config.replace(**{'trainer.warm_start_from_pushed': False})


class LockHeld(Exception):
  pass


class RetrainLock(home_lock.PidLock):
  """Exclusive, non-blocking lock on `<home>/.retrain.lock`: LockHeld when
  another retrain holds it."""

  def __init__(self, home: str):
    os.makedirs(home, exist_ok=True)
    path = os.path.join(home, LOCK_FILENAME)

    def refuse(holder: str):
      raise LockHeld(f'another retrain is running (pid {holder}, lock '
                     f'{path}); not starting a second one') from None

    super().__init__(path, refuse)
