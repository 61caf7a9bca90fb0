"""A module's input_fn as training calls it: once per input pipeline, with
the pipeline's InputContext when it takes one, else cut to its rows."""

import types

import pytest
import tensorflow as tf

from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.user_code import UserCodeError
from tpu_embeddings.training import model_inputs

ROWS, BATCHES = 8, 4


def module(input_fn):
  return ModelModule(types.SimpleNamespace(
      embedding_spec=lambda ctx: None, loss_fn=lambda *a: 0.0,
      signatures=lambda *a: {}, input_fn=input_fn), path='my_module.py')


def global_batches(ctx, epochs):
  del epochs
  return tf.data.Dataset.range(ROWS * BATCHES).batch(
      ctx.global_batch_size, drop_remainder=True).map(lambda x: ({'id': x},
                                                                 {}))


def pipeline(index):
  return tf.distribute.InputContext(num_input_pipelines=2,
                                    input_pipeline_id=index,
                                    num_replicas_in_sync=2)


def rows_of(dataset):
  return [ids['id'].numpy().tolist() for ids, _ in dataset]


def test_two_pipelines_of_a_module_input_get_disjoint_rows_covering_it():
  ctx = ModelContext(global_batch_size=ROWS)
  input_fn = model_inputs.input_factory(module(global_batches), None, ctx, 1)
  shares = [rows_of(input_fn(pipeline(i))) for i in (0, 1)]
  # Step k: pipeline 0 has the first half of global batch k, pipeline 1 the
  # second.
  assert shares[0][1] == [8, 9, 10, 11] and shares[1][1] == [12, 13, 14, 15]
  flat = [sum(s, []) for s in shares]
  assert not set(flat[0]) & set(flat[1])
  assert sorted(flat[0] + flat[1]) == list(range(ROWS * BATCHES))


def test_one_pipeline_gets_the_module_input_as_it_is():
  ctx = ModelContext(global_batch_size=ROWS)
  input_fn = model_inputs.input_factory(module(global_batches), None, ctx, 1)
  assert rows_of(input_fn(tf.distribute.InputContext())) == rows_of(
      global_batches(ctx, 1))
  assert model_inputs.element_spec(input_fn)[0]['id'].shape == [ROWS]


def test_an_input_fn_taking_the_context_reads_its_share_itself():
  seen = []

  def own_share(ctx, epochs, input_context):
    seen.append((epochs, input_context.input_pipeline_id))
    return tf.data.Dataset.range(input_context.input_pipeline_id, 32, 2).batch(
        input_context.get_per_replica_batch_size(ctx.global_batch_size)).map(
            lambda x: ({'id': x}, {}))

  ctx = ModelContext(global_batch_size=ROWS)
  input_fn = model_inputs.input_factory(module(own_share), None, ctx, 3)
  shares = [sum(rows_of(input_fn(pipeline(i))), []) for i in (0, 1)]
  assert seen == [(3, 0), (3, 1)]
  assert not set(shares[0]) & set(shares[1])
  assert sorted(shares[0] + shares[1]) == list(range(32))


def test_an_input_fn_returning_no_dataset_is_one_line_naming_it():
  ctx = ModelContext(global_batch_size=ROWS)
  input_fn = model_inputs.input_factory(
      module(lambda ctx, epochs: [1, 2]), None, ctx, 1)
  with pytest.raises(UserCodeError, match='my_module.py.*input_fn.*returned '
                     'a list; it must return a tf.data.Dataset'):
    model_inputs.element_spec(input_fn)


def test_each_pipeline_s_input_is_built_once():
  calls = []

  def counted(ctx, epochs):
    calls.append(epochs)
    return global_batches(ctx, epochs)

  ctx = ModelContext(global_batch_size=ROWS)
  input_fn = model_inputs.input_factory(module(counted), None, ctx, 1)
  spec = model_inputs.element_spec(input_fn)
  assert input_fn(tf.distribute.InputContext()).element_spec == spec
  input_fn(pipeline(0))
  assert calls == [1, 1]  # the single pipeline's, then pipeline 0 of 2's


def test_the_training_input_has_no_autotuning_thread_to_wait_for():
  # An autotuned iterator's destructor joins its model thread, which can
  # sleep tens of seconds after the last step.
  ctx = ModelContext(global_batch_size=ROWS)
  input_fn = model_inputs.input_factory(module(global_batches), None, ctx, 1)
  dataset = input_fn(tf.distribute.InputContext())
  assert dataset.options().autotune.enabled is False
  assert rows_of(dataset) == rows_of(global_batches(ctx, 1))
