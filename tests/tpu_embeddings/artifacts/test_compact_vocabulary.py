"""Tests of tpu_embeddings/artifacts/compact_vocabulary.py."""

import tracemalloc

import numpy as np
import pytest

from tpu_embeddings.artifacts import compact_vocabulary
from tpu_embeddings.artifacts import vocabulary_file

CompactVocabulary = compact_vocabulary.CompactVocabulary


def _write(tmp_path, content: bytes) -> str:
  (tmp_path / vocabulary_file.VOCABULARY_FILENAME).write_bytes(content)
  return str(tmp_path)


@pytest.mark.parametrize('content', [
    'é\t9\nb\t3\na\u3000b\t3\nnul\x00\t1\n'.encode(),
    b'a\t3\r\nb\t2\r\n',   # CRLF, as `read` accepts it
    b'a\t3\nb\t2',         # a last line without its newline
])
def test_reads_what_vocabulary_file_reads(tmp_path, content):
  uri = _write(tmp_path, content)
  want = vocabulary_file.read(uri)
  got = CompactVocabulary.read(uri)
  assert tuple(got) == want.tokens and len(got) == len(want)
  assert got.counts.tolist() == list(want.counts)
  assert got.token_counts() == want
  assert got[-1] == want.tokens[-1] and got[0:2] == list(want.tokens[:2])
  assert got.rows(list(want.tokens)).tolist() == list(range(len(want)))


@pytest.mark.parametrize('content,message', [
    (b'', 'is empty'),
    (b'a\t1\nb\n', 'line 2'),
    (b'a\t1\n\xff\t2\n', 'line 2: not UTF-8'),
])
def test_bad_files_are_the_same_clear_errors(tmp_path, content, message):
  uri = _write(tmp_path, content)
  with pytest.raises(vocabulary_file.VocabularyError, match=message):
    CompactVocabulary.read(uri)


def test_lookups_of_known_and_unknown_tokens(tmp_path):
  tokens = ['the', 'cat', 'Paris', '東京', 'a b']
  vocab = CompactVocabulary.from_tokens(tokens, [5, 4, 3, 2, 1])
  assert vocab.rows(['cat', 'dog', 'Paris', '東京'.encode(), '']).tolist() == [
      1, -1, 2, 3, -1]
  assert vocab.ids_of(['paris', 'Paris', 'the', 'cat', 'x']) == {
      'Paris': 2, 'the': 0, 'cat': 1}
  assert 'a b' in vocab and 'a' not in vocab and 3 not in vocab
  assert vocab.same_tokens(CompactVocabulary.from_tokens(tokens))
  assert not vocab.same_tokens(CompactVocabulary.from_tokens(tokens[:4]))
  assert not vocab.same_tokens(tokens)
  with pytest.raises(IndexError):
    vocab[5]


def test_tokens_sharing_a_fingerprint_keep_their_own_rows(monkeypatch):
  # Every token gets the same fingerprint: lookups compare the bytes.
  monkeypatch.setattr(compact_vocabulary, '_fingerprints',
                      lambda tokens: np.zeros([len(tokens)], np.int64))
  vocab = CompactVocabulary.from_tokens(['x', 'y', 'z'])
  assert vocab.rows(['z', 'x', 'w', 'y']).tolist() == [2, 0, -1, 1]


def test_holds_tens_of_bytes_per_token(tmp_path):
  rows = 100_000
  path = tmp_path / vocabulary_file.VOCABULARY_FILENAME
  path.write_text(''.join(f'token{i}\t{rows - i}\n' for i in range(rows)))
  tracemalloc.start()
  vocab = CompactVocabulary.read(str(tmp_path))
  held, _ = tracemalloc.get_traced_memory()
  tracemalloc.stop()
  assert len(vocab) == rows and vocab.rows(['token99999'])[0] == rows - 1
  # The tokens' own bytes (about 11 a line here) and about 30 bytes of
  # arrays; a Python string and int per token would be over 100.
  assert held / rows < 48
