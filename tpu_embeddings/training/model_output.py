"""What the trainer writes into its Model besides checkpoints, and the check
that a rerun on the same output trains the same thing.

    embedding_spec.json     the resolved spec
    vocabulary.tsv or       the vocabularies the tables follow
      vocabularies.json + vocabularies/<name>/vocabulary.tsv
    user_module.py          the module file (none for skip-gram)
    metadata.json           last: a Model without it is incomplete
"""

import time
from typing import Any, Dict, Sequence

import tensorflow as tf

from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.artifacts import vocabularies as vocabularies_lib
from tpu_embeddings.models import exported_table
from tpu_embeddings.models import module_files
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec


def write_inputs(model_uri: str, spec: EmbeddingSpec,
                 vocabularies: vocabularies_lib.Vocabularies,
                 module: ModelModule) -> Dict[str, str]:
  """Spec, vocabularies and module source; {metadata key: module SHA-256}."""
  spec.save(model_uri)
  vocabularies_lib.write(model_uri, vocabularies)
  return module_files.write_to_model(module, model_uri)


def check_rerun(model_uri: str, spec: EmbeddingSpec,
                vocabularies: vocabularies_lib.Vocabularies,
                module: ModelModule):
  """A rerun on the same output must train the same spec, vocabularies and
  module file."""
  path = model_layout.join(model_uri, 'embedding_spec.json')
  if tf.io.gfile.exists(path) and EmbeddingSpec.load(model_uri) != spec:
    raise ValueError(
        f'model {model_uri} holds a checkpoint of another embedding spec; '
        'use a new output or the same embedding_spec')
  written = [n for n in vocabularies.names if tf.io.gfile.exists(
      model_layout.join(vocabularies_lib.directory_of(model_uri, n),
                        'vocabulary.tsv'))]
  if written and vocabularies_lib.read(model_uri) != vocabularies:
    raise ValueError(
        f'model {model_uri} holds a checkpoint of another vocabulary; use a '
        'new output or the same vocabulary')
  source = module_files.user_module_path(model_uri)
  if tf.io.gfile.exists(source):
    with tf.io.gfile.GFile(source) as f:
      if f.read() != module.source:
        raise ValueError(
            f'model {model_uri} holds a checkpoint of another module file; '
            'use a new output or the same module file')


def model_figures(spec: EmbeddingSpec,
                  vocabularies: vocabularies_lib.Vocabularies,
                  module: ModelModule) -> Dict[str, Any]:
  """`dim` and `vocabulary_size` of metadata.json: those of the table the
  module declares exported (`exported_table`), else {table: dim} and
  {vocabulary: tokens}."""
  exported = exported_table.declared_table(module, spec)
  if exported is not None:
    table, vocabulary = exported
    return {'dim': spec.table(table).dim,
            'vocabulary_size': len(vocabularies[vocabulary])}
  return {'dim': {t.name: t.dim for t in spec.tables},
          'vocabulary_size': {n: len(vocabularies[n])
                              for n in vocabularies.names}}


def kernels(path: str, reason: str) -> Dict[str, Any]:
  """metadata.json's record of the ops that trained the step
  (model_layout.KERNELS_KEY) and why not the fused op."""
  return {model_layout.KERNELS_KEY: path,
          model_layout.KERNELS_REASON_KEY: reason or None}


def summary(path: str, reason: str) -> str:
  """The ops that trained the step, as the run's summary line says it."""
  names = {model_layout.FUSED_KERNELS: 'fused CPU ops',
           model_layout.TENSORFLOW_KERNELS: 'TensorFlow ops',
           model_layout.TPU_KERNELS: 'TPU ops'}
  return names[path] + (f' ({reason})' if reason else '')


def spans(examples: Sequence[Any], span_key: str) -> list:
  found = set()
  for artifact in examples:
    if artifact.has_custom_property(span_key):
      found.add(int(artifact.get_int_custom_property(span_key)))
    elif artifact.has_property(span_key):
      found.add(int(getattr(artifact, span_key)))
  return sorted(found)


def now() -> int:
  return int(time.time())
