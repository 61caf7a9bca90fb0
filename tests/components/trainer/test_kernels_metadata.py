"""The trained Model's metadata and the trainer's summary line say whether
the fused CPU ops or TensorFlow's trained the step."""

import logging

import pytest

from components.trainer import executor
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.kernels import library
from tpu_embeddings.models.skipgram_features import skipgram_spec


@pytest.mark.parametrize('optimizer,kernels,reason,said', [
    ('sgd', 'fused', None, 'with fused CPU ops,'),
    ('adam', 'tensorflow', 'optimizer Adam (the op has SGD and Adagrad)',
     'with TensorFlow ops (optimizer Adam (the op has SGD and Adagrad)),'),
])
def test_the_model_and_the_summary_say_which_ops_trained(
    small_inputs, tmp_path, caplog, optimizer, kernels, reason, said):
  library.build()  # fails, saying why, where the ops cannot be built
  examples, vocabulary = small_inputs
  caplog.set_level(logging.INFO, logger='absl')
  meta = executor.train(
      executor.TrainerArgs(examples, vocabulary, str(tmp_path / 'model'),
                           str(tmp_path / 'run')),
      executor.TrainerConfig(
          embedding_spec=skipgram_spec(dim=4, optimizer=optimizer).to_json(),
          batch_size=4, train_steps=2, epochs=0))
  assert meta[model_layout.KERNELS_KEY] == kernels
  assert meta[model_layout.KERNELS_REASON_KEY] == reason
  on_disk = model_layout.read_metadata(str(tmp_path / 'model'))
  assert on_disk[model_layout.KERNELS_KEY] == kernels
  done = [r.getMessage() for r in caplog.records
          if r.getMessage().startswith('EmbeddingTrainer done')]
  assert len(done) == 1 and said in done[0], done
