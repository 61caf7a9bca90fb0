"""Fresh-process load check: what TFX's InfraValidator does for serving.

Exports are loaded in a new Python process (`python -m
components.exporter.load_check CANARY.npz KIND=EXPORT_DIR ...`) that sees only the
files on disk, and must answer canary inputs with the values computed from the
restored table: a few vocabulary tokens, an OOV token, "" and sentences that
exercise the sqrtn combiner. `kind` is `serving` (its three signatures through
tf.saved_model.load and through a TF1 session loader, as TF Serving loads it,
and its warm-up requests) or `hub` (`hub.load(...).signatures`, the TF2 way to call a
TF1 Hub module).
"""

import argparse
import collections.abc
import concurrent.futures
import dataclasses
import gc
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from components import huge_pages
from components import serving_contract

KINDS = ('serving', 'hub')
_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Interpreter for the check; the serving environment is this one.
PYTHON = sys.executable
DEFAULT_TIMEOUT_SECONDS = 900
RTOL, ATOL = 1e-5, 1e-6


class LoadCheckError(RuntimeError):
  """An export failed to load or to answer its canary inputs."""


@dataclasses.dataclass
class Canary:
  tokens: List[str]
  token_embeddings: np.ndarray     # [len(tokens), dim]
  sentences: List[str]
  sentence_embeddings: np.ndarray  # [len(sentences), dim]

  def save(self, path: str):
    np.savez(path, tokens=np.array(self.tokens, dtype=str),
             token_embeddings=self.token_embeddings,
             sentences=np.array(self.sentences, dtype=str),
             sentence_embeddings=self.sentence_embeddings)

  @classmethod
  def load(cls, path: str) -> 'Canary':
    with np.load(path) as d:
      return cls([str(t) for t in d['tokens']], d['token_embeddings'],
                 [str(s) for s in d['sentences']], d['sentence_embeddings'])


class TokenFile(collections.abc.Sequence):
  """A one-token-per-line file as the `tokens` of `make_canary`.

  Only the lines in `known` ({line: token}, e.g. from
  `vocabulary_file.write_tokens_asset`) can be indexed; `in` scans the file
  block by block. Nothing per token is held in memory.
  """

  def __init__(self, path: str, size: int, known: Dict[int, str]):
    self._path, self._size, self._known = path, size, dict(known)

  def __len__(self) -> int:
    return self._size

  def __getitem__(self, i: int) -> str:
    i = i + self._size if i < 0 else i
    if i not in self._known:
      raise IndexError(f'{self._path}: line {i} was not read')
    return self._known[i]

  def __contains__(self, token) -> bool:
    from components import vocabulary_file  # pylint: disable=g-import-not-at-top
    line = b'\n' + token.encode('utf-8') + b'\n'
    return any(line in b'\n' + block
               for block in vocabulary_file.line_blocks(self._path))


def make_canary(tokens: Sequence[str],
                read_rows: Callable[[int, int], np.ndarray]) -> Canary:
  """Canary inputs and expected outputs for a table whose row i is tokens[i].

  `read_rows(start, stop)` returns table rows; only the few canary rows are read.
  """
  size = len(tokens)
  picks = sorted({0, size // 2, size - 1})
  rows = {i: np.asarray(read_rows(i, i + 1), np.float32)[0] for i in picks}
  dim = rows[0].shape[0]
  oov = 'oov-canary'
  while oov in tokens:  # only a scan in the unlikely case it is a token
    oov += '-'
  vector = {tokens[i]: rows[i] for i in picks}
  zero = np.zeros([dim], np.float32)
  embed = lambda t: vector.get(t, zero)

  def sqrtn(sentence):
    parts = sentence.split()
    if not parts:
      return zero
    return (np.sum([embed(t) for t in parts], axis=0, dtype=np.float32) /
            np.float32(np.sqrt(len(parts))))

  first, middle, last = (tokens[picks[0]], tokens[picks[len(picks) // 2]],
                         tokens[picks[-1]])
  canary_tokens = [first, oov, '', middle, last]
  sentences = [f'{first} {first}', '', f'{first} {oov}',
               f' {first}\t{middle} {last} ', oov]
  return Canary(canary_tokens,
                np.stack([embed(t) for t in canary_tokens]),
                sentences, np.stack([sqrtn(s) for s in sentences]))


def _compare(what: str, got, want):
  got = np.asarray(got)
  if got.shape != want.shape:
    raise LoadCheckError(f'{what}: shape {got.shape}, expected {want.shape}')
  if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
    worst = float(np.max(np.abs(got - want)))
    raise LoadCheckError(f'{what}: differs from the checkpoint by up to {worst}')


def check_serving(export_dir: str, canary: Canary):
  """Both ways a serving export is loaded: `tf.saved_model.load`, and a
  session loader (TF Serving, `saved_model_cli run`), which runs the init op
  once and then each request, warm-up requests included. The two loads run
  side by side: each spends most of its time in TensorFlow's C++ runtime."""
  from components.exporter import warmup  # pylint: disable=g-import-not-at-top
  try:
    requests = warmup.read(export_dir)
  except Exception as e:  # pylint: disable=broad-except
    raise LoadCheckError(f'serving export: warm-up requests: '
                         f'{type(e).__name__}: {_reason(e)}') from e
  if not requests:
    raise LoadCheckError(
        f'serving export: {warmup.warmup_path(export_dir)} is empty')
  with concurrent.futures.ThreadPoolExecutor(1) as pool:
    in_session = pool.submit(_check_serving_in_a_session, export_dir, canary,
                             requests)
    try:
      neighbors = _check_serving_saved_model(export_dir, canary)
    except Exception:
      in_session.exception()  # wait for it; this error is reported
      raise
    session_neighbors = in_session.result()
  if session_neighbors.tolist() != neighbors.tolist():
    raise LoadCheckError(
        f'serving neighbors: {session_neighbors.tolist()} in a session, '
        f'{neighbors.tolist()} from tf.saved_model.load')


def _check_serving_saved_model(export_dir: str, canary: Canary) -> np.ndarray:
  """The canary through `tf.saved_model.load`; returns the neighbour tokens
  of the first canary token."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  loaded = tf.saved_model.load(export_dir)
  missing = set(serving_contract.SIGNATURES) - set(loaded.signatures)
  if missing:
    raise LoadCheckError(
        f'serving export lacks signature(s) {sorted(missing)}')
  call = lambda name, **inputs: {
      k: v.numpy() for k, v in loaded.signatures[name](**{
          n: tf.constant(x) for n, x in inputs.items()}).items()}
  return _check_serving_answers('serving', call, canary)


def _check_serving_in_a_session(export_dir: str, canary: Canary,
                                requests) -> np.ndarray:
  """The canary, then each warm-up request, through a TF1 session loader."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  with tf.Graph().as_default() as graph, tf.compat.v1.Session(
      graph=graph) as session:
    try:
      meta_graph = tf.compat.v1.saved_model.load(
          session, [tf.saved_model.SERVING], export_dir)
    except Exception as e:  # pylint: disable=broad-except
      raise LoadCheckError(f'serving export: session loader: '
                           f'{type(e).__name__}: {_reason(e)}') from e

    def run(name, **inputs):
      if name not in meta_graph.signature_def:
        raise LoadCheckError(
            f'serving export lacks signature {name!r} in a session')
      signature = meta_graph.signature_def[name]
      try:
        return session.run(
            {k: v.name for k, v in signature.outputs.items()},
            {signature.inputs[k].name: v for k, v in inputs.items()})
      except Exception as e:  # pylint: disable=broad-except
        raise LoadCheckError(f'serving {name} in a session: '
                             f'{type(e).__name__}: {_reason(e)}') from e

    neighbors = _check_serving_answers('serving (session)', run, canary)
    for name, inputs in requests:
      run(name, **inputs)
    return neighbors


_TRACE_PREFIXES = ('Graph execution error', 'Detected at node', 'File "',
                   'Node:', '[[', 'Original stack trace')


def _reason(e: Exception) -> str:
  """The line of an error that says what went wrong (TF's graph errors start
  with a header and the Python stack of the failing op)."""
  lines = [l.strip() for l in str(e).splitlines() if l.strip()]
  reasons = [l for l in lines
             if not l.startswith(_TRACE_PREFIXES) and not l.endswith(':')]
  return (reasons or lines or [''])[0]


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
  """The canary through `hub.load(export_dir).signatures`."""
  module_file = serving_contract.HUB_MODULE_FILENAME
  if not os.path.exists(os.path.join(export_dir, module_file)):
    raise LoadCheckError(f'hub export {export_dir} has no {module_file}')
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
  loaded = hub.load(export_dir)
  for name, key, inputs, want in (
      (serving_contract.HUB_DEFAULT, serving_contract.SENTENCES,
       canary.sentences, canary.sentence_embeddings),
      (serving_contract.HUB_TOKENS, serving_contract.TOKENS, canary.tokens,
       canary.token_embeddings)):
    out = loaded.signatures[name](**{key: tf.constant(inputs)})
    _compare(f'hub signature {name}', out[serving_contract.HUB_OUTPUT], want)


def check(kind: str, export_dir: str, canary: Canary):
  """Runs the check in this process (the child side)."""
  if kind not in KINDS:
    raise LoadCheckError(f'unknown export kind {kind!r}; one of {KINDS}')
  (check_serving if kind == 'serving' else check_hub)(export_dir, canary)


class FreshProcess:
  """A new Python process that load-checks exports handed to it one by one.

  Start it before exporting: the new interpreter imports TensorFlow while the
  exports are being written, and can check the first export while the next
  one is written. It sees only files on disk. `submit` queues a check;
  `wait` returns when every queued check has passed, and raises
  LoadCheckError naming the export and the reason otherwise. Use as a
  context manager, so the process never outlives the export.
  """

  def __init__(self, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS):
    self._timeout = timeout_seconds
    self._tmp = tempfile.TemporaryDirectory(prefix='load-check-')
    self._pending: List[str] = []
    self._buffer = b''
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [_PROJECT_ROOT] + [p for p in env.get('PYTHONPATH', '').split(
            os.pathsep) if p])
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    env = huge_pages.environ(env)  # loads a multi-GB table
    # stderr goes to a file: TensorFlow's log lines could fill a pipe.
    self._stderr = open(os.path.join(self._tmp.name, 'stderr'), 'w+b')
    try:
      self._proc = subprocess.Popen(
          [PYTHON, '-m', 'components.exporter.load_check', '--serve'],
          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
          env=env, bufsize=0)
    except OSError as e:
      self.close()
      raise LoadCheckError(
          f'cannot start {PYTHON} for the load check ({e})') from e

  def __enter__(self) -> 'FreshProcess':
    return self

  def __exit__(self, *unused):
    self.close()

  def submit(self, kind: str, export_dir: str, canary: Canary):
    """Queues the check of one export (returns at once)."""
    if kind not in KINDS:
      raise LoadCheckError(f'unknown export kind {kind!r}; one of {KINDS}')
    canary_path = os.path.join(self._tmp.name, f'canary{len(self._pending)}.npz')
    canary.save(canary_path)
    name = f'{kind} export {export_dir}'
    try:
      self._proc.stdin.write(json.dumps(
          {'canary': canary_path, 'kind': kind, 'path': export_dir}).encode(
              'utf-8') + b'\n')
    except OSError:
      pass  # the process died; wait() reports why
    self._pending.append(name)

  def wait(self):
    """Blocks until every submitted check is answered; raises on a failure."""
    while self._pending:
      name = self._pending[0]
      line = self._read_line(time.monotonic() + self._timeout)
      if line is None:
        self.close()
        raise LoadCheckError(
            f'{name}: fresh-process load check timed out after '
            f'{self._timeout} s')
      if not line:
        self._proc.wait()
        self._stderr.seek(0)
        lines = [l for l in self._stderr.read().decode(
            'utf-8', 'replace').splitlines() if l.strip()]
        reason = lines[-1] if lines else f'exit code {self._proc.returncode}'
        self.close()
        raise LoadCheckError(f'fresh-process load check failed: {reason}')
      answer = json.loads(line)
      self._pending.pop(0)
      if answer.get('error'):
        self.close()
        raise LoadCheckError(
            f'fresh-process load check failed: {answer["error"]}')

  def _read_line(self, deadline: float) -> Optional[bytes]:
    """One answer line; b'' when the process has exited, None on timeout."""
    while b'\n' not in self._buffer:
      left = deadline - time.monotonic()
      ready = left > 0 and select.select([self._proc.stdout], [], [], left)[0]
      if not ready:
        return None
      chunk = os.read(self._proc.stdout.fileno(), 1 << 16)
      if not chunk:
        return b''
      self._buffer += chunk
    line, self._buffer = self._buffer.split(b'\n', 1)
    return line + b'\n'

  def close(self):
    proc = getattr(self, '_proc', None)
    if proc is not None:
      # Answered or abandoned: nothing is left to do there, and a clean
      # TensorFlow shutdown takes seconds.
      if proc.poll() is None:
        proc.kill()
      proc.wait()
      proc.stdin.close()
      proc.stdout.close()
    self._stderr.close()
    self._tmp.cleanup()


def run_in_fresh_process(exports: Sequence[Tuple[str, str]], canary: Canary,
                         timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS):
  """Loads each `(kind, export_dir)` in one new Python process.

  One process for all exports pays TensorFlow's import once. Raises
  LoadCheckError naming the export and the reason on any failure.
  """
  for kind, _ in exports:
    if kind not in KINDS:
      raise LoadCheckError(f'unknown export kind {kind!r}; one of {KINDS}')
  with FreshProcess(timeout_seconds) as process:
    for kind, path in exports:
      process.submit(kind, path, canary)
    process.wait()


def _serve() -> int:
  """The child side of FreshProcess: one JSON request per stdin line."""
  # Answers get the real stdout; anything else printed goes to stderr.
  answers = os.fdopen(os.dup(1), 'w')
  os.dup2(2, 1)
  sys.stdout = sys.stderr
  for line in sys.stdin:
    request = json.loads(line)
    kind, path = request['kind'], request['path']
    try:
      check(kind, path, Canary.load(request['canary']))
      gc.collect()  # release one export before loading the next
      answer = {}
    except Exception as e:  # pylint: disable=broad-except
      message = _reason(e)
      answer = {'error': f'{kind} export {path}: {type(e).__name__}: '
                         f'{message}'}
    print(json.dumps(answer), file=answers, flush=True)
  return 0


def main(argv=None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if argv == ['--serve']:
    return _serve()
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('canary', help='.npz written by Canary.save')
  parser.add_argument('exports', nargs='+', metavar='KIND=EXPORT_DIR',
                      help=f'KIND is one of {KINDS}')
  args = parser.parse_args(argv)
  canary = Canary.load(args.canary)
  for item in args.exports:
    kind, _, path = item.partition('=')
    try:
      check(kind, path, canary)
      gc.collect()  # release one export before loading the next
    except Exception as e:  # pylint: disable=broad-except
      message = _reason(e)
      print(f'{kind} export {path}: {type(e).__name__}: {message}',
            file=sys.stderr)
      return 1
  return 0


if __name__ == '__main__':
  sys.exit(main())
