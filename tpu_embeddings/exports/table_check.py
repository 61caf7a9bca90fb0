"""The load check of a table's exports (`table_source`), in this process.

An export passes when it loads and answers a `table_canary.Canary` with the
values computed from the restored table: the serving SavedModel its three
signatures through `tf.saved_model.load` and through a TF1 session loader,
as TF Serving loads it, and its warm-up requests; the Hub module through
`hub.load(...).signatures`, the TF2 way to call a TF1 Hub module, and
through `hub.Module` in a TF1 graph; and each export's vocabulary asset
lists the canary's tokens at their rows (`check_asset`). Each loader reads
the export into a graph and a session of its own (`graph_loaders`), so
nothing it loads is shared with the process's eager state: the exporter
runs these checks in its own process, as
`tpu_embeddings.exports.fresh_process` can in a new one.
"""

import concurrent.futures
import os
from typing import Callable

import numpy as np

from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.core import tf_allocator
from tpu_embeddings.exports import graph_loaders
from tpu_embeddings.exports import limits
from tpu_embeddings.exports import warmup
from tpu_embeddings.exports.load_errors import LoadCheckError
from tpu_embeddings.exports.load_errors import reason
from tpu_embeddings.exports.table_canary import Canary
from tpu_embeddings.exports.table_canary import expected_lines
from tpu_embeddings.exports.table_canary import lines_at

RTOL, ATOL = 1e-5, 1e-6


def _compare(what: str, got, want):
  got = np.asarray(got)
  if got.shape != want.shape:
    raise LoadCheckError(f'{what}: shape {got.shape}, expected {want.shape}')
  if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
    worst = float(np.max(np.abs(got - want)))
    raise LoadCheckError(
        f'{what}: differs from the checkpoint by up to {worst}')


def _warmup_requests(export_dir: str):
  """The serving export's warm-up requests; LoadCheckError if unreadable
  or empty."""
  try:
    requests = warmup.read(export_dir)
  except Exception as e:
    raise LoadCheckError(f'serving export: warm-up requests: '
                         f'{type(e).__name__}: {reason(e)}') from e
  if not requests:
    raise LoadCheckError(
        f'serving export: {warmup.warmup_path(export_dir)} is empty')
  return requests


def check_serving(export_dir: str, canary: Canary):
  """Both ways a serving export is loaded: `tf.saved_model.load`, and a
  session loader (TF Serving, `saved_model_cli run`), which runs the init op
  once and then each request, warm-up requests included. The two loads must
  return the same neighbours; they run on two threads, or one after the
  other for a table over `limits.OVERLAP_MAX_BYTES`."""
  requests = _warmup_requests(export_dir)
  if limits.variables_bytes(export_dir) > limits.OVERLAP_MAX_BYTES:
    # The session's load first: closing the session frees its table (and
    # vocabulary tables) before the second load; a `tf.saved_model.load`
    # keeps its resources until the process ends.
    session_neighbors = _check_serving_in_a_session(export_dir, canary,
                                                    requests)
    tf_allocator.release()
    neighbors = _check_serving_saved_model(export_dir, canary)
  else:
    neighbors, session_neighbors = _side_by_side(export_dir, canary,
                                                 requests)
  if session_neighbors.tolist() != neighbors.tolist():
    raise LoadCheckError(
        f'serving neighbors: {session_neighbors.tolist()} in a session, '
        f'{neighbors.tolist()} from tf.saved_model.load')


def _side_by_side(export_dir: str, canary: Canary, requests):
  """(neighbours from `tf.saved_model.load`, from a session loader), the
  two loads on two threads."""
  with concurrent.futures.ThreadPoolExecutor(1) as pool:
    in_session = pool.submit(_check_serving_in_a_session, export_dir, canary,
                             requests)
    try:
      neighbors = _check_serving_saved_model(export_dir, canary)
    except Exception:
      in_session.exception()  # wait for it; this error is reported
      raise
    return neighbors, in_session.result()


def _check_serving_saved_model(export_dir: str, canary: Canary) -> np.ndarray:
  """The canary through `tf.saved_model.load`; returns the neighbour tokens
  of the first canary token."""
  with graph_loaders.loaded_session(
      export_dir, 'serving export (tf.saved_model.load)',
      export_kinds.SERVING.loader) as (run, signatures):
    missing = set(serving_contract.SIGNATURES) - set(signatures)
    if missing:
      raise LoadCheckError(
          f'serving export lacks signature(s) {sorted(missing)}')
    return _check_serving_answers(
        export_kinds.SERVING.name, lambda name, **inputs: run(name, inputs),
        canary)


def _check_serving_in_a_session(export_dir: str, canary: Canary,
                                requests) -> np.ndarray:
  """The canary, then each warm-up request, through a TF1 session loader;
  returns the neighbour tokens of the first canary token."""
  with graph_loaders.serving_session(export_dir, 'serving') as run:
    neighbors = _check_serving_answers(
        'serving (session)', lambda name, **inputs: run(name, inputs), canary)
    for name, inputs in requests:
      run(name, inputs)
    return neighbors


def check_serving_in_a_session(export_dir: str, canary: Canary):
  """The canary and the warm-up requests through a session loader only, in
  this process (`graph_loaders`)."""
  _check_serving_in_a_session(export_dir, canary, _warmup_requests(export_dir))


def _check_serving_answers(what: str, call, canary: Canary):
  """`call(signature, **inputs)` -> {output: ndarray} answers the canary;
  returns the neighbour tokens of its first token."""
  sentences, tokens, k = (serving_contract.SENTENCES, serving_contract.TOKENS,
                          serving_contract.K)
  embeddings, scores = serving_contract.EMBEDDINGS, serving_contract.SCORES
  for name, inputs, want in (
      (serving_contract.LOOKUP, {tokens: canary.tokens},
       canary.token_embeddings),
      (serving_contract.SERVING_DEFAULT, {sentences: canary.sentences},
       canary.sentence_embeddings)):
    _compare(f'{what} {name}', call(name, **inputs)[embeddings], want)
  name = serving_contract.NEIGHBORS
  out = call(name, **{tokens: canary.tokens[:1], k: 1})
  if out[tokens].shape != (1, 1) or not (np.abs(out[scores]) <= 1 + 1e-5).all():
    raise LoadCheckError(
        f'{what} {name}: expected [1, 1] tokens and cosine scores, got '
        f'{out[tokens].shape} tokens, scores {out[scores].tolist()}')
  return out[tokens]


def check_hub(export_dir: str, canary: Canary):
  """The canary through `hub.load(export_dir).signatures` and through
  `hub.Module` in a TF1 graph."""
  with graph_loaders.loaded_session(export_dir, 'hub export (hub.load)',
                                    export_kinds.HUB.loader) as (run, _):
    for name, key, inputs, want in _hub_calls(canary):
      _compare(f'hub signature {name}',
               run(name, {key: inputs})[serving_contract.HUB_OUTPUT], want)
  check_hub_in_a_graph(export_dir, canary)


def _hub_calls(canary: Canary):
  """(signature, input, canary values, expected outputs) of the Hub check."""
  return ((serving_contract.HUB_DEFAULT, serving_contract.SENTENCES,
           canary.sentences, canary.sentence_embeddings),
          (serving_contract.HUB_TOKENS, serving_contract.TOKENS, canary.tokens,
           canary.token_embeddings))


def check_hub_in_a_graph(export_dir: str, canary: Canary):
  """The canary through `hub.Module` in a TF1 graph, in this process
  (`graph_loaders`)."""
  calls = _hub_calls(canary)
  outputs = graph_loaders.hub_module_outputs(
      export_dir, {name: {key: inputs} for name, key, inputs, _ in calls})
  for name, _, _, want in calls:
    _compare(f'hub signature {name} (hub.Module)',
             outputs[name][serving_contract.HUB_OUTPUT], want)


def check_asset(kind: str, export_dir: str, canary: Canary):
  """The export's vocabulary asset holds the canary's tokens at their rows.

  Its lookups find rows through the sorted fingerprints saved beside the
  table (`token_ids`), not through the asset, so the canary's answers alone
  would not show an asset listing other tokens: consumers read it to name
  the rows.
  """
  path = os.path.join(export_dir, serving_contract.ASSETS_DIR,
                      serving_contract.TOKENS_ASSET_FILENAME)
  if not os.path.isfile(path):
    raise LoadCheckError(f'{kind} export: no vocabulary asset {path}')
  want = expected_lines(canary, vocabulary_file.count_lines(path))
  got = lines_at(path, list(want))
  for row, token in sorted(want.items()):
    if got.get(row) != token:
      raise LoadCheckError(
          f'{kind} export: vocabulary asset {path} differs from the '
          f'checkpoint\'s tokens: line {row + 1} is {got.get(row)!r}, '
          f'expected {token!r}')


def _asset_then(kind: str, check: Callable[[str, Canary], None]):
  """`check` of a `kind` export, after `check_asset`."""

  def checked(export_dir: str, canary: Canary):
    check_asset(kind, export_dir, canary)
    check(export_dir, canary)

  return checked


# {export kind: its check}: every registered kind has one.
CHECKS = {
    export_kinds.SERVING.name: _asset_then(export_kinds.SERVING.name,
                                           check_serving),
    export_kinds.HUB.name: _asset_then(export_kinds.HUB.name, check_hub)}
# {export kind: its check through graph loaders only, in this process}.
GRAPH_CHECKS = {
    export_kinds.SERVING.name: _asset_then(export_kinds.SERVING.name,
                                           check_serving_in_a_session),
    export_kinds.HUB.name: _asset_then(export_kinds.HUB.name,
                                       check_hub_in_a_graph)}
