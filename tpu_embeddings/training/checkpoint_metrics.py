"""A model's declared metrics (`eval_fn`, METRICS) of each checkpoint.

The validator scores the final checkpoint through the signatures the model
will serve; this scores every checkpoint of a run the same way, for
TensorBoard's eval/ curves. The first checkpoint is restored on CPU into a
serving model (tables, dense model, vocabularies as assets); each later one
is read into the same variables, so the signatures are traced once.

The copy holds the tables once more (without slots) in the trainer's host
memory, and `eval_fn` reads what it asks for (the eval split, a catalog)
there too: the validator's cost, paid during training.
"""

import os
import shutil
import tempfile
from typing import Dict, Optional

import tensorflow as tf
from absl import logging

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import raw_features
from tpu_embeddings.models import heldout
from tpu_embeddings.models import model_restore
from tpu_embeddings.models import user_code
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.user_code import UserCodeError


class CheckpointMetrics:
  """`module.evaluate` of the latest checkpoint under `model_uri`."""

  def __init__(self, module, ctx: ModelContext, model_uri: str):
    self.module = module
    self.ctx = ctx
    self.model_uri = model_uri
    self._restored = None
    self._serve = None
    self._scored = ''
    self._failed = False
    self._vocabularies = ''

  @classmethod
  def of(cls, module, ctx: Optional[ModelContext],
         model_uri: str) -> Optional['CheckpointMetrics']:
    """None when the module declares no evaluation, serves no signatures of
    its own (a module served by its `exported_table`, like skip-gram, logs
    its `heldout_pairs` loss instead) or has nothing to read."""
    if not (module.has_eval and module.declared('signatures') and
            ctx is not None and model_uri):
      return None
    try:
      raw_features.split_files(ctx.examples_uris, heldout.EVAL_SPLIT)
    except FileNotFoundError:
      logging.warning('EmbeddingTrainer: no %s in TensorBoard: the Examples '
                      'have no eval split', ', '.join(sorted(module.metrics)))
      return None
    return cls(module, ctx, model_uri)

  def _load(self, path: str):
    if self._restored is None:
      self._restored = model_restore.restore(self.model_uri, self.module,
                                             self.ctx, path)
      self._vocabularies = tempfile.mkdtemp(prefix='checkpoint-metrics-')
      serving = self._restored.serving_model(
          self._restored.write_vocabularies(self._vocabularies))
      self._serve = serving.served()
      return
    objects = {model_layout.EMBEDDING_KEY: self._restored.embedding}
    if self._restored.model is not None:
      objects[model_layout.MODEL_KEY] = self._restored.model
    tf.train.Checkpoint(**objects).restore(path).expect_partial()

  def __call__(self) -> Dict[str, float]:
    """{metric: value} of the latest checkpoint; {} when there is none yet
    or it was scored already (a value of None is left out).

    A module whose signatures or eval_fn fail is not scored again: a
    warning names the error, and training goes on (the validator, which
    needs them, stops the run on it with its one line)."""
    path = tf.train.latest_checkpoint(
        model_layout.checkpoint_dir(self.model_uri))
    if not path or path == self._scored or self._failed:
      return {}
    self._scored = path
    try:
      self._load(path)
      values = self.module.evaluate(self._serve, self.ctx)
    except (UserCodeError, ValueError, tf.errors.OpError) as e:
      self._failed = True
      logging.warning('EmbeddingTrainer: no %s in TensorBoard from %s on: '
                      '%s', ', '.join(sorted(self.module.metrics)),
                      os.path.basename(path), user_code.first_line(e))
      return {}
    return {k: v for k, v in values.items() if v is not None}

  def close(self):
    if self._vocabularies:
      shutil.rmtree(self._vocabularies, ignore_errors=True)
      self._vocabularies = ''
