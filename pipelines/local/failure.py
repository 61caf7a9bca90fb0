"""A local run that failed or was stopped: where, why, and what it kept.

The CLI prints one line from these: the component, the cause, what a rerun
of the same command starts from (components that finished are cached, the
trainer continues from its newest checkpoint: tpu_embeddings/training/resume.py,
kept.py) and the version still served.
"""

import errno
import json
import os
from typing import List, Optional

from pipelines import pipeline as pipeline_lib
from pipelines import stop_signals
from pipelines.local import home as home_lib
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.push_root import status as push_status

TRAINER = 'EmbeddingTrainer'
# SQLite's words, as ML Metadata quotes them, for a store that cannot be
# written (its result codes FULL, READONLY and IOERR).
_STORE_WORDS = (('database or disk is full', errno.ENOSPC),
                ('readonly database', errno.EROFS),
                ('disk I/O error', errno.EIO))


def _newest_step(model_uri: str) -> int:
  found = model_layout.saved_checkpoints(model_uri) if model_uri else []
  return found[0][0] if found else 0


def trainer_checkpoint(pipeline_root: str) -> Optional[str]:
  """'checkpoint at step N in <dir>' of the training this process ran, from
  its resume record; None without one past step 0."""
  resume_root = pipeline_lib.resume_root_for(pipeline_root)
  if not os.path.isdir(resume_root):
    return None
  for name in sorted(os.listdir(resume_root)):
    if not name.endswith('.json'):
      continue
    try:
      with open(os.path.join(resume_root, name)) as f:
        record = json.load(f)
    except (OSError, ValueError):
      continue
    if not isinstance(record, dict) or record.get('pid') != os.getpid():
      continue
    model = str(record.get('model_uri') or '')
    kept = os.path.join(resume_root, name[:-len('.json')] + '.kept')
    step = max(_newest_step(model), _newest_step(kept))
    if step:
      return (f"the trainer's checkpoint at step {step} (a rerun continues "
              'from it)')
  return None


def kept(home: str, node: Optional[str], done: List[str]) -> str:
  """'kept ...; <served>' for the one line."""
  p = home_lib.paths(home)
  parts = []
  if done:
    parts.append(f'the outputs of {", ".join(done)} (a rerun reuses them)')
  if node == TRAINER:
    parts.append(trainer_checkpoint(p['pipeline_root']) or '')
  text = f'kept {" and ".join(x for x in parts if x)}; ' if any(parts) else ''
  try:
    served = push_status.served_version(p['push_root'])
  except (OSError, ValueError):
    served = None
  return text + (f'pushed version {served} is still served' if served else
                 'nothing was pushed before')


class RunFailed(RuntimeError):
  """A component raised; `cause` is its exception."""

  def __init__(self, node: str, cause: BaseException, kept_text: str):
    super().__init__(f'{node} failed: {cause}')
    self.node = node
    self.cause = cause
    self.kept = kept_text


class RunStopped(stop_signals.Stopped):
  """A stop signal arrived while `node` (or orchestration) ran."""

  def __init__(self, signum: int, node: Optional[str], kept_text: str):
    super().__init__(signum)
    self.node = node
    self.kept = kept_text

  def line(self) -> str:
    where = f' during {self.node}' if self.node else ''
    return (f'stopped by {stop_signals.name(self.signum)}{where}: '
            f'{self.kept}; run the same command again to continue')


def store_error(error: BaseException, home: str) -> Optional[OSError]:
  """The OSError naming the home's metadata.sqlite when `error` is its
  SQLite database failing for want of space or write access (ML Metadata's
  message quotes the SQL statement or the protobuf it was writing)."""
  for e in stop_signals.error_chain(error):
    if isinstance(e, OSError):
      return None  # names its own file
    for words, number in _STORE_WORDS:
      if words in str(e):
        return OSError(number, os.strerror(number),
                       home_lib.metadata_path(home))
  return None


def wrap(error: BaseException, home: str, node: Optional[str],
         done: List[str]) -> BaseException:
  """The RunStopped or RunFailed to raise for `error`, or `error` itself
  when no component was running (the store's OSError for a full or
  read-only metadata.sqlite)."""
  signum = stop_signals.signal_of(error)
  if signum is not None:
    return RunStopped(signum, node, kept(home, node, done))
  plain = store_error(error, home)
  if plain is not None:
    plain.__cause__ = error
    error = plain
  if node is None or not isinstance(error, Exception):
    return error
  return RunFailed(node, error, kept(home, node, done))
