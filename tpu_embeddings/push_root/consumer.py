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
    version, vectors = consumer.embed(          # a two-tower query
        '/tmp/home/pushed', {'user_id': ['u1'], 'history': ['i1 i2']})

`embed` and `neighbors` call what the version's SavedModel declares
(tpu_embeddings/push_root/declared.py): a model without the signature asked
for is a one-line error naming those it has; values are fed as each input
declares them (tokens, integer ids).
"""

import dataclasses
from typing import Any, Dict, List, Optional, Tuple, Union

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts.export_kinds import HUB
from tpu_embeddings.artifacts.export_kinds import SERVING
from tpu_embeddings.core import file_system
from tpu_embeddings.core import text
from tpu_embeddings.push_root import declared
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


def embed(push_root: str, rows: declared.Rows,
          version: Optional[Union[int, str]] = None, loaded=None,
          signature: str = serving_contract.SERVING_DEFAULT):
  """(version, float32 [rows, dim]) from the model's `signature`.

  `rows`: the values of the signature's one input, one per row (skip-gram's
  sentences), or {input: values} for every input of a signature that takes
  several (the two-tower query's `user_id` and `history`), each a string or
  an integer id as the input declares.
  """
  number, model = ((version, loaded) if loaded is not None else
                   load_serving(push_root, version))
  function = declared.signature(model, signature)
  out = declared.call(function, signature,
                     declared.feed(function, signature, rows))
  if len(out) != 1 and serving_contract.EMBEDDINGS not in out:
    raise ValueError(f'signature {signature!r} answers {sorted(out)}; embed '
                     'reads a signature with one output')
  key = (serving_contract.EMBEDDINGS if serving_contract.EMBEDDINGS in out
         else next(iter(out)))
  value = out[key].numpy()
  # One number per row (a predicted rating) is a vector of one.
  return number, value[:, None] if value.ndim == 1 else value


def unknown_tokens(push_root: str, rows: declared.Rows,
                   version: Optional[Union[int, str]] = None, loaded=None,
                   signature: str = serving_contract.SERVING_DEFAULT
                   ) -> Tuple[int, List[List[str]]]:
  """(version, the tokens of each row that the version's vocabularies
  lack): they add a zero vector to `embed`'s result, so a typo or another
  case ("Paris" for "paris") silently weakens it."""
  number, unknown, _ = token_check(push_root, rows, version, loaded,
                                   signature)
  return number, unknown


def token_check(push_root: str, rows: declared.Rows,
                version: Optional[Union[int, str]] = None, loaded=None,
                signature: str = serving_contract.SERVING_DEFAULT
                ) -> Tuple[int, List[List[str]], List[int]]:
  """(version, each row's unknown tokens, how many of its tokens were
  checked): only string inputs whose vocabulary the export ships are
  (`declared.vocabulary_path`)."""
  number, model = ((version, loaded) if loaded is not None else
                   load_serving(push_root, version))
  function = declared.signature(model, signature)
  specs = declared.inputs(function)
  found = declared.columns(function, signature, rows)
  serving_dir = push_layout.version_dir(push_root, SERVING.name, number)
  count = len(next(iter(found.values())))
  unknown: List[List[str]] = [[] for _ in range(count)]
  checked = [0] * count
  for key in sorted(found):
    path = (declared.vocabulary_path(serving_dir, key)
            if declared.is_text(specs[key]) else None)
    if path:
      for row, missing in enumerate(declared.unknown_tokens(path,
                                                            found[key])):
        unknown[row] += missing
        checked[row] += len(text.tokenize(found[key][row]))
  return number, unknown, checked


def neighbors(push_root: str, query: Union[str, int], k: int = 10,
              version: Optional[Union[int, str]] = None,
              loaded=None) -> Tuple[int, List[Tuple[Any, float]]]:
  """(version, [(token or id, cosine)] best first) from the model's
  `neighbors` signature: its one query input (a token, or an integer id, as
  it declares) and `k`."""
  if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= _MAX_K:
    raise ValueError(f'neighbors: k must be an integer >= 1 and <= {_MAX_K} '
                     f'(at most the whole vocabulary is returned), got {k!r}')
  number, model = ((version, loaded) if loaded is not None else
                   load_serving(push_root, version))
  name = serving_contract.NEIGHBORS
  function = declared.signature(model, name)
  specs = declared.inputs(function)
  queries = serving_contract.neighbors_queries(specs)
  if len(queries) != 1:
    raise ValueError(f'signature {name!r} takes {", ".join(sorted(specs))}; '
                     f'neighbors needs one query input besides '
                     f'{serving_contract.K!r}')
  key = queries[0]
  text_query = declared.is_text(specs[key])
  if text_query and text.tokenize(str(query)) != [query]:
    raise ValueError(f'neighbors: give one token without whitespace, got '
                     f'{query!r}')
  feed = {key: declared.tensor(name, key, specs[key], [query])}
  if serving_contract.K in specs:
    feed[serving_contract.K] = declared.tensor(
        name, serving_contract.K, specs[serving_contract.K], [k])
  out = declared.call(function, name, feed)
  answers = serving_contract.neighbors_answers(out)
  if serving_contract.SCORES not in out or len(answers) != 1:
    raise ValueError(f'signature {name!r} answers {sorted(out)}; neighbors '
                     f'reads {serving_contract.SCORES!r} and one other output')
  found = [t.decode('utf-8') if isinstance(t, bytes) else int(t)
           for t in out[answers[0]].numpy()[0][:k]]
  scores = [float(s) for s in out[serving_contract.SCORES].numpy()[0][:k]]
  # Padding when fewer than k are known: '' or a negative id.
  kept = [(t, s) for t, s in zip(found, scores)
          if (t if text_query else t >= 0)]
  if not kept:
    raise ValueError(f'neighbors: {"token" if text_query else "id"} '
                     f'{query!r} is not in the vocabulary of pushed version '
                     f'{number}')
  return number, kept


def rollback(push_root: str, to_version: Union[int, str],
             keep_versions: int = 0, pipeline_run_id: str = 'rollback'):
  """Makes `to_version` the served one by re-publishing it as the newest.

  Returns `tpu_embeddings.push_root.publish.Published` (its `.version` is new).
  """
  return publish.rollback(push_root, to_version,
                          pipeline_run_id=pipeline_run_id,
                          keep_versions=keep_versions)
