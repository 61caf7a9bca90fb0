"""A module file's Model restored on CPU: its dense model and its tables.

    restored = model_restore.restore(model_uri, module)
    serving = restored.serving_model(vocabulary_files)   # builds the model
    restored.check_matched()   # every variable came from the checkpoint

The tables are restored into `TPUEmbeddingForServing(optimizer=None)`
outside any TPU strategy (no slot variable is created; SparseCore layouts
need the restore before `build`), the dense model beside them, as the
trainer saved them: `tf.train.Checkpoint(embedding=, model=)`. Keras creates
a model's variables on its first call, which building the serving model
makes (every signature on sample inputs); then each created variable must
have been restored from the checkpoint (`assert_existing_objects_matched`).
Optimizer slots are never read.

`untrained` builds the same model with freshly initialized tables and dense
variables: the floor a trained model's metrics must clear.
"""

import dataclasses
import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import tensorflow as tf

from tpu_embeddings.artifacts import checkpoint_restore
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.models import serving_model as serving_lib
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.spec import embedding_variables
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


@dataclasses.dataclass
class RestoredModule:
  """A Model's module, context, spec, dense model and tables."""
  module: Any
  ctx: ModelContext
  spec: EmbeddingSpec
  model: Any
  embedding: Any
  checkpoint_path: str = ''
  status: Any = None

  def table(self, name: str) -> tf.Variable:
    return embedding_variables.parameters(self.embedding, name)

  @property
  def vocabulary_names(self):
    return sorted({t.vocabulary for t in self.spec.tables})

  def write_vocabularies(self, directory: str) -> Dict[str, str]:
    """Each table's vocabulary as a token file `<name>.txt` in `directory`
    (the exports' assets); {name: path}."""
    found = {}
    tf.io.gfile.makedirs(directory)
    for name in self.vocabulary_names:
      found[name] = os.path.join(directory, f'{name}.txt')
      vocabulary_file.write_tokens(found[name], self.ctx.vocabulary(name))
    return found

  def serving_model(self, vocabulary_files: Mapping[str, str]
                    ) -> serving_lib.ServingModel:
    return serving_lib.ServingModel(self.module, self.ctx, self.spec,
                                      self.model, self.embedding,
                                      vocabulary_files)

  def check_matched(self):
    """Every variable the model created (a ServingModel builds it) came from
    the checkpoint; CheckpointError if not."""
    if self.status is None:
      return
    try:
      self.status.assert_existing_objects_matched()
    except AssertionError as e:
      raise checkpoint_restore.CheckpointError(
          f'checkpoint {self.checkpoint_path}: the model has variables the '
          f'checkpoint does not hold ({str(e).splitlines()[0][:300]})') from e


def context(model_uri: str, module, examples_uris: Sequence[str] = (),
            max_eval_examples: int = 0,
            read_vocabularies: Callable[[str], Any] = vocabularies_lib.read
            ) -> ModelContext:
  """The `ctx` a Model's module gets outside training: its vocabularies
  (read by `read_vocabularies`), feature kinds and custom_config as the
  trainer recorded them."""
  meta = model_layout.read_metadata(model_uri) or {}
  trained = meta.get(model_layout.TRAINER_CONFIG_KEY) or {}
  return ModelContext(
      features=module.features,
      vocabularies=read_vocabularies(model_uri),
      custom_config=dict(trained.get('custom_config') or {}),
      seed=int(trained.get('seed') or 0),
      examples_uris=tuple(examples_uris),
      feature_kinds=dict(meta.get(model_layout.FEATURE_KINDS_KEY) or {}),
      max_eval_examples=max_eval_examples)


def restore(model_uri: str, module, ctx: Optional[ModelContext] = None,
            checkpoint_path: str = '',
            sparsecore_restore_info: Optional[Dict[str, Any]] = None
            ) -> RestoredModule:
  """The Model's tables and dense model from its latest checkpoint (built
  tables; the dense variables restored as the model creates them).
  `sparsecore_restore_info`: how a SparseCore checkpoint's rows are laid
  out (TPUEmbeddingForServing's `experimental_sparsecore_restore_info`)."""
  ctx = ctx or context(model_uri, module)
  spec = EmbeddingSpec.load(model_uri)
  path = checkpoint_path or model_layout.latest_checkpoint(model_uri)
  checkpoint_restore.check_tables(
      spec, path, sparsecore=sparsecore_restore_info is not None)
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), optimizer=None,
      experimental_sparsecore_restore_info=sparsecore_restore_info)
  model = module.build_model(ctx)
  status = checkpoint_restore.restore_objects(path, embedding, model)
  return RestoredModule(module, ctx, spec, model, embedding, path, status)


def untrained(restored: RestoredModule, seed: int = 0) -> RestoredModule:
  """The same module and spec, every variable freshly initialized."""
  tf.random.set_seed(seed)
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      restored.spec.build_feature_config(), optimizer=None)
  embedding.build()
  return RestoredModule(restored.module, restored.ctx, restored.spec,
                        restored.module.build_model(restored.ctx), embedding)
