"""The checkpoint listing of a Model folder."""

import os

import tensorflow as tf

from tpu_embeddings.artifacts import model_layout


def test_saved_checkpoints_lists_each_index_newest_first(tmp_path):
  model = str(tmp_path / 'model')
  checkpoint = tf.train.Checkpoint(step=tf.Variable(0, dtype=tf.int64))
  manager = tf.train.CheckpointManager(
      checkpoint, model_layout.checkpoint_dir(model), max_to_keep=None)
  for step in (2, 10, 7):
    manager.save(checkpoint_number=step)
  # A data file that never got its index is no checkpoint.
  open(os.path.join(model, 'checkpoint', 'ckpt-30.data-00000-of-00001'),
       'w').close()

  found = model_layout.saved_checkpoints(model)

  assert [step for step, _ in found] == [10, 7, 2]
  assert all(tf.io.gfile.exists(prefix + '.index') for _, prefix in found)


def test_a_model_without_checkpoints_lists_none(tmp_path):
  assert model_layout.saved_checkpoints(str(tmp_path / 'absent')) == []
  (tmp_path / 'empty' / 'checkpoint').mkdir(parents=True)
  assert model_layout.saved_checkpoints(str(tmp_path / 'empty')) == []
