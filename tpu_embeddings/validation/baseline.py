"""The baseline: the serving model currently pushed, read from the push root.

No ML Metadata resolver (open-source Kubeflow Pipelines cannot run resolver
nodes): the baseline is the latest complete version under
`<push_root>/serving/`, listed by `tpu_embeddings.push_root.layout`, loaded
as a SavedModel: the model's `eval_fn` scores it through the signatures it
serves, as it scores the candidate through the signatures it will serve. A
table's rows, where the export serves them (its `lookup` signature over
the tokens of the table's vocabulary, read in batches into one array) or
holds them (a module model's export: its table variables and vocabulary
assets), are read for the report.

A pushed version that cannot be read (a damaged file, a broken export) is
not the baseline: `find_baseline` reports it and goes on to the next older
version, so one damaged push never blocks every later one. Versions are
checked first against their manifests, both halves (serving and Hub): the
load check of tpu_embeddings/push_root/integrity.py (sizes, small files'
checksums, no file the manifest does not name, no symlink out); a load that
fails anyway is explained by the manifest's checksums.
"""

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging
from google.protobuf import message

from tpu_embeddings.artifacts import compact_vocabulary
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.quality import metrics
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

_BATCH = 8192
_LOAD_ERRORS = (OSError, ValueError, IndexError, tf.errors.OpError,
                message.DecodeError)


class BaselineError(RuntimeError):
  """The pushed baseline exists but cannot be read."""


@dataclasses.dataclass
class Baseline:
  """A pushed serving version, loaded."""
  path: str             # <push_root>/serving/<version>
  version: int
  loaded: Any           # the SavedModel, `tf.saved_model.load`-ed
  manifest: Dict[str, Any]
  push_root: str = ''   # where it was read (its manifest's paths: its home)

  def source_spec(self) -> Optional[EmbeddingSpec]:
    """The spec of the Model the version was exported from (its manifest's
    `source_model`), or None when it cannot be read."""
    source = self.manifest.get('source_model', '')
    if source and self.push_root:  # relative to the home it was read in
      source = home_paths.resolve(source, self.push_root)
    try:
      return EmbeddingSpec.load(source) if source else None
    except (ValueError, OSError, tf.errors.OpError):
      return None


@dataclasses.dataclass
class Unreadable:
  """A pushed version passed over because it cannot be read."""
  version: int
  path: str
  error: str

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)


def _first_line(e: Exception) -> str:
  return (str(e).splitlines() or [''])[0]


def read_tokens(export_dir: str) -> List[str]:
  """Tokens of a serving export's vocabulary asset, in row order."""
  asset = (f'{serving_contract.ASSETS_DIR}/'
           f'{serving_contract.TOKENS_ASSET_FILENAME}')
  path = push_layout.join(export_dir, asset)
  if not tf.io.gfile.exists(path):
    raise BaselineError(f'baseline {export_dir}: no {asset}; is it a serving '
                        'export of this project?')
  with tf.io.gfile.GFile(path, 'rb') as f:
    tokens = [line.decode('utf-8').rstrip('\n') for line in f]
  if not tokens:
    raise BaselineError(f'baseline {path} is empty')
  return tokens


def read(push_root: str, version: int) -> Baseline:
  """Pushed serving version `version`, loaded (BaselineError if it cannot
  be)."""
  path = push_layout.version_dir(push_root, push_layout.SERVED, version)
  try:
    loaded = tf.saved_model.load(path)
  except _LOAD_ERRORS as e:
    raise BaselineError(f'baseline {path} cannot be loaded '
                        f'({type(e).__name__}: {_first_line(e)})') from e
  manifest = push_layout.read_manifest(push_root, push_layout.SERVED, version)
  return Baseline(path, version, loaded, manifest, push_root)


def lookup_rows(baseline: Baseline, tokens: Sequence[str]
                ) -> Optional[np.ndarray]:
  """[len(tokens), dim] rows the baseline's `lookup` signature serves for
  `tokens` (zeros for tokens it does not know), filled in place in batches;
  None when it serves no `lookup`."""
  name, output = serving_contract.LOOKUP, serving_contract.EMBEDDINGS
  lookup = baseline.loaded.signatures.get(name)
  if lookup is None or serving_contract.TOKENS not in (
      lookup.structured_input_signature[1]):
    return None
  table = None  # filled in place: no second table-sized copy
  for start in range(0, len(tokens), _BATCH):
    batch = list(tokens[start:start + _BATCH])
    out = lookup(**{serving_contract.TOKENS: tf.constant(batch)})
    if output not in out:
      raise BaselineError(f'baseline {baseline.path}: {name!r} returns '
                          f'{sorted(out)}, not {output!r}')
    rows = out[output].numpy()
    if rows.ndim != 2 or rows.shape[0] != len(batch):
      raise BaselineError(f'baseline {baseline.path}: lookup returned shape '
                          f'{list(rows.shape)} for {len(batch)} tokens')
    if table is None:
      table = np.empty([len(tokens), rows.shape[1]], rows.dtype)
    table[start:start + rows.shape[0]] = rows
  return table


def exported_rows(baseline: Baseline, table: str, vocabulary: str,
                  tokens: Sequence[str]) -> Optional[np.ndarray]:
  """Rows of `table` as a module model's serving export holds them (its
  `embedding.<table>` variable, row i the i-th token of its asset
  `vocabulary_assets[vocabulary]`), ordered as `tokens` (zeros for tokens
  it does not know); None when it holds no such table."""
  variable = getattr(getattr(baseline.loaded, 'embedding', None), table, None)
  assets = getattr(baseline.loaded, 'vocabulary_assets', None)
  # A loaded dict attribute is a wrapper of its own, not a Mapping.
  asset = assets.get(vocabulary) if hasattr(assets, 'get') else None
  if not isinstance(variable, tf.Variable) or asset is None:
    return None
  with tf.io.gfile.GFile(asset.asset_path.numpy().decode('utf-8'), 'rb') as f:
    exported = compact_vocabulary.CompactVocabulary.from_tokens(
        line.decode('utf-8').rstrip('\n') for line in f)
  return metrics.align_table(exported, variable.numpy(), tokens)


def find_baseline(push_root: str,
                  reader: Optional[Callable[[str, int], Any]] = None
                  ) -> Tuple[Optional[Baseline], List[Unreadable]]:
  """The newest readable pushed version (or None), and the newer unreadable.

  `reader(push_root, version)` reads one version (default `read`); an error
  it raises passes the version over.
  """
  reader = reader or read
  unreadable: List[Unreadable] = []
  if not push_root:
    return None, unreadable
  served = push_layout.SERVED
  for version in reversed(push_layout.list_versions(push_root, served)):
    path = push_layout.version_dir(push_root, push_layout.SERVED, version)
    # Both halves: a version is intact only when its Hub module is too.
    problems = integrity.version_problems(push_root, version)
    if not problems:
      try:
        return reader(push_root, version), unreadable
      except (BaselineError, OSError, ValueError, IndexError,
              tf.errors.OpError) as e:
        problems = integrity.version_problems(push_root, version, verify=True)
        problems = problems or [_first_line(e)]
    unreadable.append(Unreadable(version, path, '; '.join(problems)))
    logging.warning('Baseline: pushed version %d cannot be read (%s); trying '
                    'an older one', version, unreadable[-1].error)
  return None, unreadable
