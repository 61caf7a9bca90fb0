"""Which ops train the CPU adapter's step: the fused op, or TensorFlow's and
why."""

import tensorflow as tf

from tpu_embeddings.kernels import library
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
