import pytest

from tpu_embeddings.core import text


def test_tokens_per_line_are_capped():
  line = ' '.join(['w'] * 10_003)
  assert len(text.tokenize(line)) == 10_000  # docs/failure_behaviour.md


@pytest.mark.parametrize('data, problem', [
    ('a b\n'.encode('utf-16'), 'UTF-16 LE (byte order mark)'),
    (b'\xfe\xff' + 'a b\n'.encode('utf-16-be'), 'UTF-16 BE (byte order mark)'),
    ('a b\n'.encode('utf-32'), 'UTF-32 LE (byte order mark)'),
    (b'\x00\x00\xfe\xff' + 'a b'.encode('utf-32-be'),
     'UTF-32 BE (byte order mark)'),
    ('word word\n'.encode('utf-16-le'), 'UTF-16 LE'),
    ('word word\n'.encode('utf-16-be'), 'UTF-16 BE'),
    ('word word\n'.encode('utf-32-le'), 'UTF-32 LE'),
    ('word word\n'.encode('utf-32-be'), 'UTF-32 BE'),
    (b'abc\x00def', 'NUL byte at offset 3'),
    ('café'.encode('latin-1'), 'invalid UTF-8 (byte 0xe9 at offset 3)'),
])
def test_encoding_problems_are_named(data, problem):
  assert problem in text.encoding_problem(data)


@pytest.mark.parametrize('data', [
    b'', b'plain ascii\n', 'café ü\u2028 x\n'.encode(),
    b'\xef\xbb\xbfwith a UTF-8 byte order mark\n',
    'cut in the middle é'.encode()[:-1],  # a chunk may end inside a character
])
def test_utf8_text_has_no_problem(data):
  assert text.encoding_problem(data, final=False) is None


def test_a_character_cut_at_the_end_of_a_whole_line_is_a_problem():
  assert 'invalid UTF-8' in text.encoding_problem('é'.encode()[:1])
