"""What the self-test compares: the pair per device, dropout switched off."""

import tensorflow as tf

from tests.tpu_embeddings.training.test_selftest_runner import two_tower
from tpu_embeddings.models import module_files
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.skipgram_features import skipgram_spec
from tpu_embeddings.training.selftest import runner
from tpu_embeddings.training.selftest import trainers


class _Strategy:
  """What `pair` reads of a TPUStrategy before an adapter is made."""

  def __init__(self, replicas):
    self.num_replicas_in_sync = replicas


def test_with_a_tpu_the_tpu_adapter_meets_the_cpu_adapter():
  spec, ctx = skipgram_spec(vocabulary_size=10), ModelContext()
  found = trainers.pair(module_files.builtin(), spec, ctx, _Strategy(8))
  assert found.candidate.name == 'TPU adapter, TPUEmbedding on 8 replica(s)'
  assert found.reference.name == 'CPU adapter (as `run` trains on CPU)'
  assert found.note == ''  # skip-gram's loss is a sum over pairs


def test_a_module_loss_on_several_replicas_is_noted_as_different_by_design():
  module = two_tower()
  spec, ctx = skipgram_spec(vocabulary_size=10), ModelContext()
  several = trainers.pair(module, spec, ctx, _Strategy(8))
  assert 'each of its 8 replicas' in several.note
  assert 'v5e 1x1' in several.note
  assert trainers.pair(module, spec, ctx, _Strategy(1)).note == ''


def test_without_a_tpu_each_model_meets_its_other_cpu_step():
  spec, ctx = skipgram_spec(vocabulary_size=10), ModelContext()
  skipgram = trainers.pair(module_files.builtin(), spec, ctx, None)
  module = trainers.pair(two_tower(), spec, ctx, None)
  assert skipgram.candidate.name.startswith('CPU adapter, hand-derived step')
  assert module.candidate.name == ('CPU adapter, activation-gradient step '
                                   '(as on a TPU)')
  assert skipgram.reference.name == module.reference.name == (
      'CPU adapter, generic step')


def test_dropout_is_off_in_the_compared_model():
  module = trainers.deterministic(two_tower())
  model = module.build_model(ModelContext())
  rates = [layer.rate for layer in model.submodules
           if isinstance(layer, tf.keras.layers.Dropout)]
  assert rates == [0.0, 0.0]  # one per tower
  # The original module is untouched: a real run keeps its dropout.
  original = two_tower().build_model(ModelContext())
  assert [layer.rate for layer in original.submodules
          if isinstance(layer, tf.keras.layers.Dropout)] == [0.1, 0.1]


def test_float32_matmuls_are_full_precision_only_for_a_tpu_and_restored():
  enabled = tf.config.experimental.tensor_float_32_execution_enabled
  before = enabled()
  with runner._float32_matmuls(on_tpu=True):
    assert not enabled()
  assert enabled() == before
  with runner._float32_matmuls(on_tpu=False):
    assert enabled() == before
