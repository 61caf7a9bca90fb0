"""The baseline: the serving model currently pushed, read from the push root.

No ML Metadata resolver (open-source Kubeflow Pipelines cannot run resolver
nodes): the baseline is the latest complete version under
`<push_root>/serving/`, listed by `components.push_layout`. Its table is read
through the SavedModel's own `lookup` signature over the tokens of its
`assets/vocabulary.txt`, i.e. exactly what serving returns, so it is scored
by the same metric code as the candidate.
"""

import dataclasses
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

from components import push_layout
from components import serving_contract

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
  except (OSError, ValueError, tf.errors.OpError) as e:
    raise BaselineError(f'baseline {export_dir} cannot be loaded '
                        f'({type(e).__name__}: {str(e).splitlines()[0]})'
                        ) from e
  parts = []
  for start in range(0, len(tokens), _BATCH):
    out = lookup(**{serving_contract.TOKENS: tf.constant(
        tokens[start:start + _BATCH])})
    if output not in out:
      raise BaselineError(f'baseline {export_dir}: {name!r} returns '
                          f'{sorted(out)}, not {output!r}')
    parts.append(out[output].numpy())
  table = np.concatenate(parts, axis=0)
  if table.ndim != 2 or table.shape[0] != len(tokens):
    raise BaselineError(f'baseline {export_dir}: lookup returned shape '
                        f'{list(table.shape)} for {len(tokens)} tokens')
  return table


def load_baseline(push_root: str) -> Optional[Baseline]:
  """The currently pushed model, or None when `push_root` is empty or unpushed."""
  if not push_root:
    return None
  version = push_layout.latest_version(push_root, 'serving')
  if version is None:
    return None
  path = push_layout.version_dir(push_root, 'serving', version)
  manifest = push_layout.read_manifest(push_root, 'serving', version)
  return Baseline(path=path, version=version, tokens=read_tokens(path),
                  table=read_serving_table(path), manifest=manifest)
