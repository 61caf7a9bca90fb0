"""Tests for tpu_embeddings/exports/graph_loaders.py: the checks an exporter
runs in its own process (`load_check.check(..., graph_only=True)`).

They must see the export on disk only: a damaged copy is refused even
while this process holds the good export under the same resource names.
"""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.support import artifact_fixtures
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts import token_ids
from tpu_embeddings.exports import export as export_lib
from tpu_embeddings.exports import graph_loaders
from tpu_embeddings.exports import limits
from tpu_embeddings.exports import load_check
from tpu_embeddings.exports import table_canary
from tpu_embeddings.models import module_files

TOKENS = ['x', 'y', 'z', 'w']
pytestmark = pytest.mark.slow


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
  """(table, {kind: export dir}): both kinds of a 4-row table, written and
  checked by the exporter's in-process path."""
  root = tmp_path_factory.mktemp('graph_loaders')
  table = np.arange(4 * 8, dtype=np.float32).reshape(4, 8) / 10.0
  artifact_fixtures.write_tpu_format_model(str(root / 'model'), TOKENS,
                                           table=table)
  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(limits, 'OVERLAP_MAX_BYTES', 0)
    dirs = export_lib.export_model(
        str(root / 'model'),
        {kind: str(root / kind) for kind in export_kinds.NAMES},
        module_files.builtin())
  return table, dirs


def _canary(table):
  return table_canary.make_canary(TOKENS, lambda a, b: table[a:b])


def _with_tokens_reversed(export_dir: str, copy: str) -> str:
  """A copy of the export whose vocabulary asset lists the tokens in
  reverse, and whose token lookup is rebuilt from it: each row then answers
  for another token."""
  shutil.copytree(export_dir, copy)
  assets = os.path.join(copy, 'assets')
  for name in os.listdir(assets):
    with open(os.path.join(assets, name)) as f:
      lines = f.read().splitlines()
    with open(os.path.join(assets, name), 'w') as f:
      f.write('\n'.join(reversed(lines)) + '\n')
    keys = token_ids.sorted_keys(os.path.join(assets, name))
  prefix = os.path.join(copy, 'variables', 'variables')
  reader = tf.train.load_checkpoint(prefix)
  tensors = {key: reader.get_tensor(key)
             for key in reader.get_variable_to_shape_map()}
  rebuilt = {'token_keys': keys.keys, 'token_values': keys.values}
  for key in tensors:
    for part, value in rebuilt.items():
      if part in key.split('/'):
        tensors[key] = value
  for name in os.listdir(os.path.dirname(prefix)):
    os.remove(os.path.join(os.path.dirname(prefix), name))
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=list(tensors),
                    shape_and_slices=[''] * len(tensors),
                    tensors=[tf.constant(v) for v in tensors.values()])
  return copy


def test_both_kinds_pass_with_graph_loaders(exported):
  table, dirs = exported
  for kind in export_kinds.NAMES:
    load_check.check(kind, dirs[kind], _canary(table), graph_only=True)


def test_hub_module_answers_the_table_rows(exported):
  table, dirs = exported
  out = graph_loaders.hub_module_outputs(
      dirs['hub'], {serving_contract.HUB_TOKENS: {
          serving_contract.TOKENS: np.array(TOKENS, dtype=object)}})
  np.testing.assert_allclose(
      out[serving_contract.HUB_TOKENS][serving_contract.HUB_OUTPUT], table,
      atol=1e-6)


@pytest.mark.parametrize('kind', export_kinds.NAMES)
def test_a_copy_with_other_tokens_is_refused_even_when_loaded_here(
    exported, tmp_path, kind):
  """The damaged copy carries the good export's resource names, and the
  good export is loaded in this process first: the copy is still read from
  its own files."""
  table, dirs = exported
  loaded = export_kinds.get(kind).loader(dirs[kind])
  assert loaded is not None
  copy = _with_tokens_reversed(dirs[kind], str(tmp_path / 'copy'))
  with pytest.raises(load_check.LoadCheckError, match='differs'):
    load_check.check(kind, copy, _canary(table), graph_only=True)


@pytest.mark.parametrize('kind', export_kinds.NAMES)
def test_tf2_loaders_in_a_graph_read_the_copy_loaded_here_too(
    exported, tmp_path, kind):
  """`tf.saved_model.load` and `hub.load` in a graph of their own answer
  from the damaged copy's own files, though this process loaded the good
  export eagerly under the same resource names."""
  table, dirs = exported
  loader = export_kinds.get(kind).loader
  assert loader(dirs[kind]) is not None
  copy = _with_tokens_reversed(dirs[kind], str(tmp_path / 'copy'))
  name = (serving_contract.LOOKUP if kind == 'serving' else
          serving_contract.HUB_TOKENS)
  output = (serving_contract.EMBEDDINGS if kind == 'serving' else
            serving_contract.HUB_OUTPUT)
  with graph_loaders.loaded_session(copy, kind, loader) as (run, names):
    assert name in names
    got = run(name, {serving_contract.TOKENS: TOKENS})[output]
  np.testing.assert_allclose(got, table[::-1], atol=1e-6)
  assert tf.executing_eagerly()


def test_a_missing_signature_is_named(exported, tmp_path):
  _, dirs = exported
  with graph_loaders.serving_session(dirs['serving'], 'serving') as run:
    with pytest.raises(load_check.LoadCheckError,
                       match="lacks signature 'nope' in a session"):
      run('nope', {})
    out = run(serving_contract.LOOKUP,
              {serving_contract.TOKENS: np.array([b'x'])})
  assert out[serving_contract.EMBEDDINGS].shape == (1, 8)
  assert tf.executing_eagerly()
