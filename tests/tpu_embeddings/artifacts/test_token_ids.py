"""Tests for tpu_embeddings/artifacts/token_ids.py."""

import os
import threading

import numpy as np
import pytest
import tensorflow as tf

from tpu_embeddings.artifacts import token_ids

TOKENS = ['the', 'cat', 'é', 'sat']


def _sorted(tokens):
  builder = token_ids.KeysBuilder(len(tokens))
  builder.add(''.join(f'{t}\n' for t in tokens).encode('utf-8'))
  return builder.sorted()


def test_known_tokens_find_their_row_and_others_are_oov():
  found = _sorted(TOKENS)
  queries = tf.constant(['sat', 'nope', '', 'the', 'é', 'cat'])
  ids, known = token_ids.find(found.keys, found.values, queries)
  assert known.numpy().tolist() == [True, False, False, True, True, True]
  assert ids.numpy().tolist() == [3, 0, 0, 0, 2, 1]


def test_a_fingerprint_match_with_another_check_hash_is_oov():
  """Stands in for a 64-bit collision: an entry under the query's key
  whose check hash belongs to a different token."""
  dog = _sorted(['dog'])
  query = tf.constant(['cat', 'dog'])
  _, known = token_ids.find(token_ids.keys(tf.constant(['cat'])), dog.values,
                            query)
  assert known.numpy().tolist() == [False, False]


def test_read_lines_checks_the_count(tmp_path):
  path = tmp_path / 'vocabulary.txt'
  path.write_text('\n'.join(TOKENS) + '\n', encoding='utf-8')
  got = token_ids.read_lines(tf.constant(str(path)), len(TOKENS))
  assert [t.decode() for t in got.numpy()] == TOKENS
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='does not hold 5 tokens'):
    token_ids.read_lines(tf.constant(str(path)), 5)


def test_sorted_keys_collide(tmp_path):
  unique = tmp_path / 'unique.txt'
  unique.write_text(''.join(f't{i}\n' for i in range(5000)), encoding='utf-8')
  assert not token_ids.sorted_keys(str(unique)).collide
  # The same token twice is the collision every vocabulary would show.
  repeated = tmp_path / 'repeated.txt'
  repeated.write_text('a\nb\nc\nb\n', encoding='utf-8')
  assert token_ids.sorted_keys(str(repeated)).collide
  assert token_ids.lookup_keys(str(repeated)) is None
  assert token_ids.lookup_keys(str(unique), keyed_by_string=True) is None


def test_sorted_keys_find_every_token_across_blocks(tmp_path, monkeypatch):
  """Read in blocks smaller than the file: every token finds its own row,
  whatever its place in the sort; other tokens are OOV."""
  tokens = [f'w{i}é' for i in range(3000)] + ['', ' ', 'the']
  tokens = [t for t in tokens if t.strip()]
  path = tmp_path / 'vocabulary.txt'
  path.write_text(''.join(f'{t}\n' for t in tokens), encoding='utf-8')
  from tpu_embeddings.artifacts import vocabulary_file
  blocks = vocabulary_file.line_blocks
  monkeypatch.setattr(vocabulary_file, 'line_blocks',
                      lambda p, block_bytes=0: blocks(p, 1000))
  found = token_ids.sorted_keys(str(path))
  assert (np.diff(found.keys) > 0).all()
  queries = tf.constant(tokens + ['w3000é', 'nope', ''])
  ids, known = token_ids.find(tf.constant(found.keys),
                              tf.constant(found.values), queries)
  assert ids.numpy().tolist() == list(range(len(tokens))) + [0, 0, 0]
  assert known.numpy().tolist() == [True] * len(tokens) + [False] * 3


def test_values_pack_id_and_check_hash():
  found = _sorted(TOKENS)
  ids = found.values & ((1 << token_ids.ID_BITS) - 1)
  assert sorted(ids.tolist()) == list(range(len(TOKENS)))
  order = np.argsort(ids)
  np.testing.assert_array_equal(
      found.keys[order], token_ids.keys(tf.constant(TOKENS)).numpy())
  assert (found.keys >= 0).all()


def test_building_the_table_does_not_read_the_file(tmp_path):
  """Graph shape inference evaluates small constant subgraphs while ops are
  created; the vocabulary must be read when the table is initialized, never
  while an export is traced or loaded. The file is a FIFO, so a read blocks
  until something writes to it."""
  fifo = str(tmp_path / 'vocabulary.txt')
  os.mkfifo(fifo)

  def build():
    with tf.Graph().as_default():
      lines = token_ids.read_lines(tf.constant(fifo), 3)
      tf.compat.v1.lookup.StaticHashTable(
          tf.compat.v1.lookup.KeyValueTensorInitializer(
              lines, tf.range(3, dtype=tf.int64)), default_value=-1)
    tf.function(lambda path: token_ids.keys(
        token_ids.read_lines(path, 3))).get_concrete_function(
            tf.constant(fifo))

  thread = threading.Thread(target=build, daemon=True)
  thread.start()
  thread.join(timeout=30)
  blocked = thread.is_alive()
  if blocked:  # release the read
    with open(fifo, 'w', encoding='utf-8') as f:
      f.write('a\nb\nc\n')
    thread.join()
  assert not blocked, 'building the table read the vocabulary file'


def test_keys_builder_takes_the_tokens_it_expects():
  """Blocks as a writer hands them: lines past the expected count are not
  hashed, and too few are refused."""
  builder = token_ids.KeysBuilder(3)
  builder.add(b'a\nb\n')
  with pytest.raises(ValueError, match='2 tokens hashed, 3 expected'):
    builder.sorted()
  builder.add(b'c\nd\n')
  found = builder.sorted()
  ids, known = token_ids.find(found.keys, found.values,
                              tf.constant(['c', 'a', 'b', 'd']))
  assert ids.numpy().tolist() == [2, 0, 1, 0]
  assert known.numpy().tolist() == [True, True, True, False]
