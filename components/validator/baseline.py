"""The baseline: the serving model currently pushed, read from the push root.

No ML Metadata resolver (open-source Kubeflow Pipelines cannot run resolver
nodes): the baseline is the latest complete version under
`<push_root>/serving/`, listed by `tpu_embeddings.push_root.layout`. Its table
is read through the SavedModel's own `lookup` signature over the tokens of its
`assets/vocabulary.txt`, i.e. exactly what serving returns, so it is scored
by the same metric code as the candidate.

A pushed version that cannot be read (a damaged file, a broken export) is
not the baseline: `find_baseline` reports it and goes on to the next older
version, so one damaged push never blocks every later one. Versions are
checked first against their manifests, both halves (serving and Hub): the
load check of tpu_embeddings/push_root/integrity.py (sizes, small files'
checksums, no file the manifest does not name, no symlink out); a load that
fails anyway is explained by the manifest's checksums.
"""

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import logging
from google.protobuf import message

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout

_BATCH = 8192


class BaselineError(RuntimeError):
  """The pushed baseline exists but cannot be read."""


@dataclasses.dataclass
class Baseline:
  path: str             # <push_root>/serving/<version>
  version: int
  tokens: List[str]     # row order of `table`
  table: np.ndarray     # [len(tokens), dim] float32, as served by `lookup`
  manifest: Dict[str, Any]
  push_root: str = ''   # where it was read (its manifest's paths: its home)


@dataclasses.dataclass
class Unreadable:
  """A pushed version passed over because it cannot be read."""
  version: int
  path: str
  error: str

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)


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


def read_serving_table(export_dir: str) -> np.ndarray:
  """`[vocabulary size, dim]` rows of a serving export, via `lookup`."""
  tokens = read_tokens(export_dir)
  name = serving_contract.LOOKUP
  output = serving_contract.EMBEDDINGS
  try:
    loaded = tf.saved_model.load(export_dir)
    lookup = loaded.signatures[name]
  except KeyError as e:
    raise BaselineError(f'baseline {export_dir} has no {name!r} '
                        'signature') from e
  except (OSError, ValueError, IndexError, tf.errors.OpError,
          message.DecodeError) as e:
    raise BaselineError(f'baseline {export_dir} cannot be loaded '
                        f'({type(e).__name__}: '
                        f'{(str(e).splitlines() or [""])[0]})'
                        ) from e
  table = None  # filled in place: no second table-sized copy
  for start in range(0, len(tokens), _BATCH):
    out = lookup(**{serving_contract.TOKENS: tf.constant(
        tokens[start:start + _BATCH])})
    if output not in out:
      raise BaselineError(f'baseline {export_dir}: {name!r} returns '
                          f'{sorted(out)}, not {output!r}')
    rows = out[output].numpy()
    if rows.ndim != 2 or rows.shape[0] != len(tokens[start:start + _BATCH]):
      raise BaselineError(f'baseline {export_dir}: lookup returned shape '
                          f'{list(rows.shape)} for '
                          f'{len(tokens[start:start + _BATCH])} tokens')
    if table is None:
      table = np.empty([len(tokens), rows.shape[1]], rows.dtype)
    table[start:start + rows.shape[0]] = rows
  return table


def _read(push_root: str, version: int) -> Baseline:
  path = push_layout.version_dir(push_root, 'serving', version)
  manifest = push_layout.read_manifest(push_root, 'serving', version)
  return Baseline(path=path, version=version, tokens=read_tokens(path),
                  table=read_serving_table(path), manifest=manifest,
                  push_root=push_root)


def find_baseline(push_root: str,
                  read: Optional[Callable[[str, int], Any]] = None
                  ) -> Tuple[Optional[Baseline], List[Unreadable]]:
  """The newest readable pushed version (or None), and the newer unreadable.

  `read(push_root, version)` reads one version (default: skip-gram's table,
  through its `lookup` signature); an error it raises passes the version
  over.
  """
  read = read or _read
  unreadable: List[Unreadable] = []
  if not push_root:
    return None, unreadable
  for version in reversed(push_layout.list_versions(push_root, 'serving')):
    path = push_layout.version_dir(push_root, 'serving', version)
    # Both halves: a version is intact only when its Hub module is too.
    problems = integrity.version_problems(push_root, version)
    if not problems:
      try:
        return read(push_root, version), unreadable
      except (BaselineError, OSError, ValueError, IndexError,
              tf.errors.OpError) as e:
        problems = integrity.version_problems(push_root, version, verify=True)
        problems = problems or [(str(e).splitlines() or [''])[0]]
    unreadable.append(Unreadable(version, path, '; '.join(problems)))
    logging.warning('Baseline: pushed version %d cannot be read (%s); trying '
                    'an older one', version, unreadable[-1].error)
  return None, unreadable


def load_baseline(push_root: str) -> Optional[Baseline]:
  """The newest readable pushed model; None when there is none."""
  return find_baseline(push_root)[0]


def loss_not_comparable(baseline: Optional[Baseline],
                        candidate_two_tables: bool) -> str:
  """Why the held-out losses of the candidate and `baseline` cannot be
  compared ('' when they can).

  The served baseline holds only its input table, so its loss is scored with
  tied vectors: the loss of the model it came from only if that model was
  tied too (its spec, next to its source model, says).
  """
  if baseline is None:
    return ''
  if candidate_two_tables:
    return ('the candidate scores pairs with a contexts table, the pushed '
            'version holds only its tokens table')
  from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
  source = baseline.manifest.get('source_model', '')
  if baseline.push_root:  # relative to the home it was read in
    source = home_paths.resolve(source, baseline.push_root)
  try:
    tables = len(EmbeddingSpec.load(source).tables) if source else 0
  except (ValueError, OSError, tf.errors.OpError):
    tables = 0
  if tables == 1:
    return ''
  return ('the pushed version was trained with a contexts table it does not '
          'hold' if tables else 'the pushed version\'s source model, which '
          'says how it scored pairs, cannot be read')
