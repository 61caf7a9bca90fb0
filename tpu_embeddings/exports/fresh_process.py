"""A new Python process that load-checks exports: what InfraValidator does.

The process (`python -m tpu_embeddings.exports.fresh_process`) sees only
the files on disk. It reads one JSON request per stdin line, `{"kind",
"path", "canary", "format"}` (`canary` is an .npz written by the canary's
`save`, `format` its class's FORMAT), runs `load_check.check` and answers one
JSON line on stdout, `{}` or `{"error": "<kind> export <path>: <reason>"}`.
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

from tpu_embeddings.core import huge_pages
from tpu_embeddings.core import import_gc
from tpu_embeddings.core import tf_allocator
from tpu_embeddings.exports import limits
from tpu_embeddings.exports import load_errors

_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Interpreter for the check; the serving environment is this one.
PYTHON = sys.executable
DEFAULT_TIMEOUT_SECONDS = 900


class FreshProcess:
  """A new Python process that load-checks exports handed to it one by one.

  Start it before exporting: the new interpreter imports TensorFlow while the
  exports are being written, and can check the first export while the next
  one is written. `submit` queues a check; `wait` returns when every queued
  check has passed, and raises LoadCheckError naming the export and the
  reason otherwise. Use as a context manager, so the process never outlives
  the export.
  """

  def __init__(self, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS):
    self.timeout = timeout_seconds
    self._tmp = tempfile.TemporaryDirectory(prefix='load-check-')
    self._pending: List[str] = []
    self._buffer = b''
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [_PROJECT_ROOT] + [p for p in env.get('PYTHONPATH', '').split(
            os.pathsep) if p])
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    # Loads a multi-GB table, and gives it back before the next export.
    env = tf_allocator.environ(huge_pages.environ(env))
    # stderr goes to a file: TensorFlow's log lines could fill a pipe.
    self._stderr = open(os.path.join(self._tmp.name, 'stderr'), 'w+b')
    try:
      self._proc = subprocess.Popen(
          [PYTHON, '-m', 'tpu_embeddings.exports.fresh_process'],
          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
          env=env, bufsize=0)
    except OSError as e:
      self.close()
      raise load_errors.LoadCheckError(
          f'cannot start {PYTHON} for the load check ({e})') from e

  def __enter__(self) -> 'FreshProcess':
    return self

  def __exit__(self, *unused):
    self.close()

  def submit(self, kind: str, export_dir: str, canary):
    """Queues the check of one export against `canary` (either format of
    `load_check.FORMATS`); returns at once."""
    from tpu_embeddings.exports import load_check  # imported where used
    load_check.check_kind(kind)
    canary_path = os.path.join(self._tmp.name,
                               f'canary{len(self._pending)}.npz')
    canary.save(canary_path)
    name = f'{kind} export {export_dir}'
    try:
      self._proc.stdin.write(json.dumps(
          {'canary': canary_path, 'format': canary.FORMAT, 'kind': kind,
           'path': export_dir}).encode(
              'utf-8') + b'\n')
    except OSError:
      pass  # the process died; wait() reports why
    self._pending.append(name)

  def wait(self):
    """Blocks until every submitted check is answered; raises on a failure."""
    while self._pending:
      name = self._pending[0]
      line = self._read_line(time.monotonic() + self.timeout)
      if line is None:
        self.close()
        raise load_errors.LoadCheckError(
            f'{name}: fresh-process load check timed out after '
            f'{self.timeout} s')
      if not line:
        self._proc.wait()
        self._stderr.seek(0)
        lines = [l for l in self._stderr.read().decode(
            'utf-8', 'replace').splitlines() if l.strip()]
        reason = lines[-1] if lines else f'exit code {self._proc.returncode}'
        self.close()
        raise load_errors.LoadCheckError(
            f'fresh-process load check failed: {reason}')
      answer = json.loads(line)
      self._pending.pop(0)
      if answer.get('error'):
        self.close()
        raise load_errors.LoadCheckError(
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
      # Answered or abandoned: nothing is left to do there, so it is killed
      # instead of waiting for TensorFlow to shut down.
      if proc.poll() is None:
        proc.kill()
      proc.wait()
      proc.stdin.close()
      proc.stdout.close()
    self._stderr.close()
    self._tmp.cleanup()


def _serve() -> int:
  """The child side of FreshProcess: one JSON request per stdin line."""
  # TensorFlow, imported here rather than at the top: this side imports it
  # with the collector paused, and the exporter's side had it already.
  with import_gc.paused():
    from tpu_embeddings.exports import load_check
  # Answers get the real stdout; anything else printed goes to stderr.
  answers = os.fdopen(os.dup(1), 'w')
  os.dup2(2, 1)
  sys.stdout = sys.stderr
  for line in sys.stdin:
    request = json.loads(line)
    kind, path = request['kind'], request['path']
    try:
      load_check.check(kind, path, load_check.load_canary(
          request['format'], request['canary']))
      if limits.variables_bytes(path) > limits.OVERLAP_MAX_BYTES:
        tf_allocator.release()  # one export released before the next loads
      answer = {}
    except Exception as e:
      answer = {'error': f'{kind} export {path}: {type(e).__name__}: '
                         f'{load_errors.reason(e)}'}
    print(json.dumps(answer), file=answers, flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(_serve())
