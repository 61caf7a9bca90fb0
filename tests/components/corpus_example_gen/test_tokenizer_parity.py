"""One tokenizer rule (tpu_embeddings.core.text), three forms: Python's
(`text.tokenize`: serving clients, canaries), TensorFlow's
(`text.tf_tokenize`: the exports) and Arrow's (the corpus ExampleGen's
`encode`, which writes the Examples the vocabulary counts). They must split
every line alike, or a served sentence looks up other tokens than training
saw."""

import pytest
import tensorflow as tf

from components.corpus_example_gen import encode
from tpu_embeddings.core import text

TRICKY = [
    '',
    '   \t ',
    'a  b\tc',
    '  leading and trailing  ',
    'carriage\rreturn, vertical\x0btab and form\x0cfeed',
    'hello, world! (punctuation) stays "in" tokens; ok?',
    'café naïve Ünïcödé',
    '東京 タワー 😀👍🏽 ok',
    'no-break\u00a0space and ideographic\u3000space stay inside',
    'line\u2028separator, next\u0085line, zero\u200bwidth',
    'file\x1cgroup\x1drecord\x1eunit\x1fseparators are not whitespace',
    '\ufeffmark-free',
]


def python_form(line):
  return text.tokenize(line)


def tensorflow_form(line):
  (tokens,) = text.tf_tokenize(tf.constant([line])).to_list()
  return [t.decode('utf-8') for t in tokens]


def arrow_form(line):
  _, _, tokens = encode.encode_block_with_tokens(line.encode('utf-8'), 'f')
  rows = tokens.to_pylist()
  return [t.decode('utf-8') for t in rows[0]] if rows else []


@pytest.mark.parametrize('line', TRICKY)
def test_the_three_forms_split_alike(line):
  # The ExampleGen drops a byte order mark at a line's start; the others
  # never see one (clients send text, not files).
  expected = python_form(line.lstrip('\ufeff'))
  assert tensorflow_form(line.lstrip('\ufeff')) == expected
  assert arrow_form(line) == expected


def test_the_rule_splits_on_ascii_whitespace_only():
  assert python_form('a\u00a0b c\x1cd\te') == ['a\u00a0b', 'c\x1cd', 'e']
  assert python_form(' \t\r\x0b\x0c ') == []
