"""Using what the pusher published: list versions, embed, neighbours, rollback.

Everything here reads only the push root (local or any `tf.io.gfile` path); no
ML Metadata and no pipeline code is needed, so this is what a service or a
notebook imports. The default version is the one TF Serving serves, the
highest numbered one (tpu_embeddings/push_root/status.py), and a version is
used only once the files of both its halves (serving and Hub) pass the load
check against their manifests (tpu_embeddings/push_root/integrity.py); a
damaged one raises
`integrity.DamagedVersionError` naming the file and the rollback to run:

    from tpu_embeddings.push_root import consumer
    version, vectors = consumer.embed('/tmp/home/pushed', ['the cat sat'])
    version, rows = consumer.neighbors('/tmp/home/pushed', 'cat', k=5)
"""

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.artifacts.export_kinds import HUB
from tpu_embeddings.artifacts.export_kinds import SERVING
from tpu_embeddings.core import file_system
from tpu_embeddings.core import text
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import publish
from tpu_embeddings.push_root import status as push_status

# The `neighbors` signature's k is an int32.
_MAX_K = 2**31 - 1


@dataclasses.dataclass
class PushedVersion:
  version: int
  serving_dir: str
  hub_dir: str
  manifest: Dict[str, Any]       # the serving manifest
  hub_manifest: Dict[str, Any]
  problems: List[str] = dataclasses.field(default_factory=list)  # damage

  def summary(self) -> Dict[str, Any]:
    """The manifest without per-file checksums, plus both directories."""
    out = {k: v for k, v in self.manifest.items() if k not in ('files', 'kind')}
    out['serving_dir'] = self.serving_dir
    out['hub_dir'] = self.hub_dir
    out['files'] = len(self.manifest.get('files', {})) + len(
        self.hub_manifest.get('files', {}))
    return out


def list_pushed(push_root: str) -> List[PushedVersion]:
  """Versions whose both manifests can be read, oldest first; `problems`
  lists a damaged one's (push_status.scan lists every numbered folder)."""
  out = []
  for v in push_status.scan(push_root):
    if v.state in (push_status.INTACT, push_status.DAMAGED) and all(
        v.manifests.get(kind) for kind in push_layout.KINDS):
      out.append(PushedVersion(
          v.version,
          push_layout.version_dir(push_root, SERVING.name, v.version),
          push_layout.version_dir(push_root, HUB.name, v.version),
          v.manifests[SERVING.name], v.manifests[HUB.name], v.problems))
  return out


def latest_version(push_root: str) -> Optional[int]:
  """The version TF Serving serves (the highest numbered), or None."""
  return push_status.served_version(push_root)


def version_dirs(push_root: str, version: Optional[Union[int, str]] = None
                 ) -> Dict[str, str]:
  """{kind: dir} of the served or given version, once each of its kinds
  passes the load check (else DamagedVersionError)."""
  number = resolve_version(push_root, version)
  problems = integrity.version_problems(push_root, number)
  if problems:
    raise integrity.damaged_error(push_root, number, problems)
  return {kind: push_layout.version_dir(push_root, kind, number)
          for kind in push_layout.KINDS}


def resolve_version(push_root: str,
                    version: Optional[Union[int, str]] = None) -> int:
  """`version`, or the served one; a clear error if there is none."""
  if version is None:
    number = push_status.served_version(push_root)
    if number is None:
      raise FileNotFoundError(
          f'push root {push_layout.check_root(push_root)} has no pushed '
          'version; run the pipeline until the pusher pushes one')
    return number
  number = push_layout.parse_version(version)
  numbered = (push_layout.numbered(push_root, push_layout.SERVED)
              if file_system.isdir(push_root) else [])
  if number not in numbered:
    raise FileNotFoundError(
        f'push root {push_layout.check_root(push_root)}: version {number} is '
        f'not a pushed version; pushed versions: {numbered or "none"}')
  return number


def load_serving(push_root: str, version: Optional[Union[int, str]] = None):
  """(version, loaded TF2 SavedModel) of the latest or given version.

  A damaged version raises `integrity.DamagedVersionError`, one line
  naming the version, the file and the rollback that serves an intact one:
  the load check runs before loading (sizes, and checksums of the small
  files), and when loading fails anyway (flipped bytes in a table) the
  checksums of every file name the one.
  """
  import tensorflow as tf
  from google.protobuf import message
  number = resolve_version(push_root, version)
  # Both halves: a version whose Hub module is damaged is damaged.
  problems = integrity.version_problems(push_root, number)
  if problems:
    raise integrity.damaged_error(push_root, number, problems)
  directory = push_layout.version_dir(push_root, SERVING.name, number)
  try:
    return number, tf.saved_model.load(directory)
  except (IndexError, OSError, ValueError, tf.errors.OpError,
          message.DecodeError) as e:
    problems = integrity.version_problems(push_root, number, verify=True)
    cause = f'{type(e).__name__}: {(str(e).splitlines() or [""])[0]}'
    raise integrity.damaged_error(push_root, number, problems,
                                           cause) from e


def embed(push_root: str, sentences: Sequence[str],
          version: Optional[Union[int, str]] = None, loaded=None):
  """(version, float32 [len(sentences), dim]) from `serving_default`."""
  import tensorflow as tf
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
  number = resolve_version(push_root, version)
  path = push_layout.join(
      push_layout.version_dir(push_root, SERVING.name, number),
      f'{serving_contract.ASSETS_DIR}/{serving_contract.TOKENS_ASSET_FILENAME}')
  tokens = [text.tokenize(s) for s in sentences]
  wanted = {t.encode('utf-8') for found in tokens for t in found}
  known = set()
  # Streamed: a set of a 10M-token vocabulary would cost about a GiB.
  for block in vocabulary_file.line_blocks(path):
    known |= wanted.intersection(block.split(b'\n'))
  return number, [[t for t in found if t.encode('utf-8') not in known]
                  for found in tokens]


def neighbors(push_root: str, token: str, k: int = 10,
              version: Optional[Union[int, str]] = None,
              loaded=None) -> Tuple[int, List[Tuple[str, float]]]:
  """(version, [(token, cosine)] best first) from the `neighbors` signature."""
  import tensorflow as tf
  if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= _MAX_K:
    raise ValueError(f'neighbors: k must be an integer >= 1 and <= {_MAX_K} '
                     f'(at most the whole vocabulary is returned), got {k!r}')
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
