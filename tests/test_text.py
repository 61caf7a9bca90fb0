import tensorflow as tf

from components import text

LINES = ['a  b\tc', '  leading and trailing  ', '', 'x\r\ny', 'café au\x0blait']


def test_python_and_tensorflow_tokenizers_agree():
  ragged = text.tf_tokenize(tf.constant(LINES))
  for line, tokens in zip(LINES, ragged.to_list()):
    assert [t.decode('utf-8') for t in tokens] == text.tokenize(line)


def test_tokens_per_line_are_capped():
  line = ' '.join(['w'] * (text.MAX_TOKENS_PER_LINE + 3))
  assert len(text.tokenize(line)) == text.MAX_TOKENS_PER_LINE
  assert len(text.tokenize_bytes(line.encode())) == text.MAX_TOKENS_PER_LINE
