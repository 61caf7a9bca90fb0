"""Tests for tpu_embeddings/artifacts/vocabulary_resources.py."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.artifacts import token_ids
from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.artifacts import vocabulary_resources

TOKENS = ['the', 'é', 'naïve', 'x' * 40, 'a\x00b', 'cat']


@pytest.fixture
def asset(tmp_path):
  path = str(tmp_path / vocabulary_file.TOKENS_ASSET_FILENAME)
  with open(path, 'w', encoding='utf-8') as f:
    f.write(''.join(f'{t}\n' for t in TOKENS))
  return path


class _Vocabulary(tf.Module):
  """Both resources over one asset, saved and loaded like an export."""

  def __init__(self, path: str):
    super().__init__()
    self.asset = tf.saved_model.Asset(path)
    self.ids = vocabulary_resources.TokenIds(
        self.asset, len(TOKENS), token_ids.lookup_keys(path))
    self.strings = vocabulary_resources.TokenStrings(
        self.asset, vocabulary_resources.line_ends(path))

  @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int64)])
  def tokens_of(self, ids):
    return self.strings.gather(ids)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def ids_of(self, tokens):
    return self.ids.lookup(tokens)


def test_line_ends_in_blocks(asset, monkeypatch):
  whole = vocabulary_resources.line_ends(asset)
  with open(asset, 'rb') as f:
    data = f.read()
  np.testing.assert_array_equal(
      whole, [i for i, b in enumerate(data) if b == ord('\n')])
  assert whole.dtype == np.int32
  blocks = vocabulary_file.line_blocks
  monkeypatch.setattr(vocabulary_file, 'line_blocks',
                      lambda p, block_bytes=0: blocks(p, 7))
  np.testing.assert_array_equal(vocabulary_resources.line_ends(asset), whole)


def test_a_saved_vocabulary_answers_both_ways(asset, tmp_path):
  saved = str(tmp_path / 'saved')
  tf.saved_model.save(_Vocabulary(asset), saved)
  loaded = tf.saved_model.load(saved)
  ids = np.array([[0, 5], [3, 1], [4, 2]], np.int64)
  got = loaded.tokens_of(tf.constant(ids)).numpy()
  assert [[t.decode() for t in row] for row in got] == [
      [TOKENS[i] for i in row] for row in ids]
  rows, known = loaded.ids_of(tf.constant(TOKENS + ['nope', '']))
  assert rows.numpy().tolist() == list(range(len(TOKENS))) + [0, 0]
  assert known.numpy().tolist() == [True] * len(TOKENS) + [False, False]


def test_an_asset_of_another_length_fails_the_load(asset, tmp_path):
  saved = str(tmp_path / 'saved')
  tf.saved_model.save(_Vocabulary(asset), saved)
  copied = os.path.join(saved, 'assets',
                        vocabulary_file.TOKENS_ASSET_FILENAME)
  with open(copied, 'a', encoding='utf-8') as f:
    f.write('extra\n')
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='is not the 63 bytes the export was made with'):
    tf.saved_model.load(saved)


def test_errors_name_the_vocabulary_file(asset, tmp_path):
  with pytest.raises(ValueError, match=rf'vocabulary {asset} has '
                     rf'{token_ids.MAX_TOKENS + 1} tokens; at most'):
    vocabulary_resources.TokenIds(tf.saved_model.Asset(asset),
                                  token_ids.MAX_TOKENS + 1, None)
  with pytest.raises(ValueError, match=rf'vocabulary {asset}: 6 token keys '
                     'for 5 tokens'):
    vocabulary_resources.TokenIds(tf.saved_model.Asset(asset), 5,
                                  token_ids.lookup_keys(asset))
  empty = tmp_path / 'empty.txt'
  empty.write_text('')
  with pytest.raises(ValueError, match=rf'vocabulary {empty} has no tokens'):
    vocabulary_resources.TokenStrings(
        tf.saved_model.Asset(str(empty)),
        vocabulary_resources.line_ends(str(empty)))
