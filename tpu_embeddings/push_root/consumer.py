"""Using what the pusher published: list versions, embed, neighbours, rollback.

Everything here reads only the push root (local or any `tf.io.gfile` path) and
only complete versions (see tpu_embeddings/push_root/layout.py); no ML Metadata
and no pipeline code is needed, so this is what a service or a notebook
imports:

    from tpu_embeddings.push_root import consumer
    version, vectors = consumer.embed('/tmp/home/pushed', ['the cat sat'])
    version, rows = consumer.neighbors('/tmp/home/pushed', 'cat', k=5)
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.core import text
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import publish


@dataclasses.dataclass
class PushedVersion:
  version: int
  serving_dir: str
  hub_dir: str
  manifest: Dict[str, Any]       # the serving manifest
  hub_manifest: Dict[str, Any]

  def summary(self) -> Dict[str, Any]:
    """The manifest without per-file checksums, plus both directories."""
    out = {k: v for k, v in self.manifest.items() if k not in ('files', 'kind')}
    out['serving_dir'] = self.serving_dir
    out['hub_dir'] = self.hub_dir
    out['files'] = len(self.manifest.get('files', {})) + len(
        self.hub_manifest.get('files', {}))
    return out


def list_pushed(push_root: str) -> List[PushedVersion]:
  """Complete versions, oldest first, with their manifests."""
  out = []
  for v in push_layout.list_versions(push_root, 'serving'):
    out.append(PushedVersion(
        v, push_layout.version_dir(push_root, 'serving', v),
        push_layout.version_dir(push_root, 'hub', v),
        push_layout.read_manifest(push_root, 'serving', v),
        push_layout.read_manifest(push_root, 'hub', v)))
  return out


def latest_version(push_root: str) -> Optional[int]:
  """The newest complete version (the one TF Serving serves), or None."""
  versions = push_layout.list_versions(push_root, 'serving')
  return versions[-1] if versions else None


def version_dirs(push_root: str, version: Optional[Union[int, str]] = None
                 ) -> Dict[str, str]:
  """{'serving': dir, 'hub': dir} of the latest or given complete version."""
  number = resolve_version(push_root, version)
  return {kind: push_layout.version_dir(push_root, kind, number)
          for kind in push_layout.KINDS}


def resolve_version(push_root: str,
                    version: Optional[Union[int, str]] = None) -> int:
  """`version` if it is complete, else the latest; clear error if none."""
  versions = push_layout.list_versions(push_root, 'serving')
  if version is None:
    if not versions:
      raise FileNotFoundError(
          f'push root {push_layout.check_root(push_root)} has no pushed '
          'version; run the pipeline until the pusher pushes one')
    return versions[-1]
  number = push_layout.parse_version(version)
  if number not in versions:
    raise FileNotFoundError(
        f'push root {push_layout.check_root(push_root)}: version {number} is '
        f'not a complete pushed version; pushed versions: '
        f'{versions or "none"}')
  return number


def load_serving(push_root: str, version: Optional[Union[int, str]] = None):
  """(version, loaded TF2 SavedModel) of the latest or given version.

  A damaged version raises `integrity.DamagedVersionError`, one line
  naming the version, the file and the rollback that serves an intact one:
  file sizes are checked against the manifest before loading (no read), and
  when loading fails anyway (flipped bytes) the checksums name the file.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from google.protobuf import message  # pylint: disable=g-import-not-at-top
  number = resolve_version(push_root, version)
  problems = integrity.version_problems(push_root, number,
                                                 kinds=('serving',))
  if problems:
    raise integrity.damaged_error(push_root, number, problems)
  directory = push_layout.version_dir(push_root, 'serving', number)
  try:
    return number, tf.saved_model.load(directory)
  except (IndexError, OSError, ValueError, tf.errors.OpError,
          message.DecodeError) as e:
    problems = integrity.version_problems(
        push_root, number, verify=True, kinds=('serving',))
    cause = f'{type(e).__name__}: {(str(e).splitlines() or [""])[0]}'
    raise integrity.damaged_error(push_root, number, problems,
                                           cause) from e


def embed(push_root: str, sentences: Sequence[str],
          version: Optional[Union[int, str]] = None, loaded=None):
  """(version, float32 [len(sentences), dim]) from `serving_default`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if isinstance(sentences, str):
    raise ValueError('embed: pass a list of sentences, not one string')
  if not sentences:
    raise ValueError('embed: give at least one sentence')
  number, model = ((version, loaded) if loaded is not None else
                   load_serving(push_root, version))
  out = model.signatures[serving_contract.SERVING_DEFAULT](**{
      serving_contract.SENTENCES: tf.constant(list(sentences), tf.string)})
  return number, out[serving_contract.EMBEDDINGS].numpy()


def unknown_tokens(push_root: str, sentences: Sequence[str],
                   version: Optional[Union[int, str]] = None
                   ) -> Tuple[int, List[List[str]]]:
  """(version, the tokens of each sentence that the version's vocabulary
  lacks): they add a zero vector to `embed`'s result, so a typo or another
  case ("Paris" for "paris") silently weakens it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  number = resolve_version(push_root, version)
  path = push_layout.join(
      push_layout.version_dir(push_root, 'serving', number),
      f'{serving_contract.ASSETS_DIR}/{serving_contract.TOKENS_ASSET_FILENAME}')
  with tf.io.gfile.GFile(path, 'rb') as f:
    known = {line.rstrip(b'\n').decode('utf-8') for line in f}
  return number, [[t for t in text.tokenize(s) if t not in known]
                  for s in sentences]


def neighbors(push_root: str, token: str, k: int = 10,
              version: Optional[Union[int, str]] = None,
              loaded=None) -> Tuple[int, List[Tuple[str, float]]]:
  """(version, [(token, cosine)] best first) from the `neighbors` signature."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if isinstance(k, bool) or not isinstance(k, int) or k < 1:
    raise ValueError(f'neighbors: k must be an integer >= 1, got {k!r}')
  if text.tokenize(token) != [token]:
    raise ValueError(f'neighbors: give one token without whitespace, got '
                     f'{token!r}')
  number, model = ((version, loaded) if loaded is not None else
                   load_serving(push_root, version))
  out = model.signatures[serving_contract.NEIGHBORS](**{
      serving_contract.TOKENS: tf.constant([token], tf.string),
      serving_contract.K: tf.constant(k, tf.int32)})
  tokens = [t.decode('utf-8')
            for t in out[serving_contract.TOKENS].numpy()[0]]
  scores = [float(s) for s in out[serving_contract.SCORES].numpy()[0]]
  if not any(tokens):
    raise ValueError(f'neighbors: token {token!r} is not in the vocabulary of '
                     f'pushed version {number}')
  return number, [(t, s) for t, s in zip(tokens, scores) if t]


def rollback(push_root: str, to_version: Union[int, str],
             keep_versions: int = 0, pipeline_run_id: str = 'rollback'):
  """Makes `to_version` the served one by re-publishing it as the newest.

  Returns `tpu_embeddings.push_root.publish.Published` (its `.version` is new).
  """
  return publish.rollback(push_root, to_version,
                          pipeline_run_id=pipeline_run_id,
                          keep_versions=keep_versions)
