"""Which ops train the CPU adapter's step: the fused op, or TensorFlow's and
why."""

import types

import pytest
import tensorflow as tf

from tpu_embeddings.kernels import library
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training import cpu_adapter

B, D, V = 8, 4, 20


def kernels(optimizer, **kwargs):
  a = cpu_adapter.for_skipgram(
      skipgram_spec(dim=D, optimizer=optimizer, vocabulary_size=V), B,
      **kwargs)
  a.build()
  return a.kernels


def test_the_adapter_says_which_ops_train_its_step():
  # Fails, saying why, where the op library cannot be built.
  tf.load_op_library(library.build())
  assert kernels('sgd') == ('fused', '')
  path, reason = kernels('adam')
  assert path == 'tensorflow' and 'optimizer Adam' in reason
  assert kernels('sgd', fused=False) == ('tensorflow',
                                         'the fused step is turned off')


def test_a_fused_step_that_does_not_exist_is_named():
  spec = skipgram_spec(dim=D, vocabulary_size=V)
  module = ModelModule(types.SimpleNamespace(
      embedding_spec=lambda ctx: spec, loss_fn=lambda *a: 0.0,
      signatures=lambda *a: {}, FEATURES={'target': 'tokens'},
      FUSED_STEP='two_tower'), path='my_module.py')
  with pytest.raises(ModelModuleError, match="module file my_module.py: "
                     "FUSED_STEP 'two_tower' names no fused step"):
    cpu_adapter.CpuAdapter(spec, module, ModelContext(global_batch_size=B))
