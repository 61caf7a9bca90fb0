"""Marking a trainer output's checkpoints as one training's.

The trainer continues checkpoints it finds in its output only when
`training_key.txt` names its own training (tpu_embeddings/training/kept.py), as
an interrupted run of that training leaves it. Tests that put checkpoints
there by other means (a TPU-format model, a copy of a trained one) mark
them with this.
"""

from components import keys
from tpu_embeddings.artifacts import vocabularies
from tpu_embeddings.training import kept
from tpu_embeddings.training import resume


def own_output(args, config, module_sha256: str = '') -> str:
  """Writes the key `executor.train(args, config)` computes; returns it."""
  key = resume.resume_key(
      args.examples, keys.TRAIN_SPLIT, vocabularies.read(args.vocabulary_uri),
      (args.base_model_uri or config.warm_start_uri).rstrip('/'), config,
      module_sha256)
  kept.write_owner(args.model_uri, key)
  return key
