"""Named vocabularies in one directory: a Vocabulary artifact or a Model.

    <uri>/vocabulary.tsv                        the single vocabulary (name ''):
                                                skip-gram's tokens
    <uri>/vocabularies.json                     {"format_version": 1,
                                                 "vocabularies":
                                                   {name: [feature, ...]}}
    <uri>/vocabularies/<name>/vocabulary.tsv    one per named vocabulary

Each `vocabulary.tsv` has the format of `vocabulary_file`. A named vocabulary
counts the tokens of the features listed for it (features that share a table
share its vocabulary). A directory without `vocabularies.json` holds just the
single vocabulary, as every artifact written before named vocabularies did.
"""

import dataclasses
import json
from typing import Dict, Mapping, Sequence, Tuple

from tpu_embeddings.artifacts import vocabulary_file
from tpu_embeddings.artifacts.vocabulary_file import TokenCounts
from tpu_embeddings.artifacts.vocabulary_file import VocabularyError

SINGLE = ''
INDEX_FILENAME = 'vocabularies.json'
NAMED_DIR = 'vocabularies'
FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Vocabularies:
  """Every vocabulary of a directory, and the features each one counts."""
  by_name: Mapping[str, TokenCounts]
  features: Mapping[str, Tuple[str, ...]]

  def __getitem__(self, name: str) -> TokenCounts:
    if name not in self.by_name:
      known = sorted(self.by_name)
      raise VocabularyError(
          f'vocabulary {name or "(single)"!r} is not in this artifact; its '
          f'vocabularies are {known if known != [""] else ["(single)"]}')
    return self.by_name[name]

  @property
  def names(self) -> Tuple[str, ...]:
    return tuple(sorted(self.by_name))


def _join(uri: str, *parts: str) -> str:
  return '/'.join([uri.rstrip('/')] + list(parts))


def directory_of(uri: str, name: str) -> str:
  """Where vocabulary `name` of `uri` is (its `vocabulary.tsv` inside)."""
  return uri if name == SINGLE else _join(uri, NAMED_DIR, name)


def is_named(uri: str) -> bool:
  import tensorflow as tf
  return tf.io.gfile.exists(_join(uri, INDEX_FILENAME))


def read_index(uri: str) -> Dict[str, Tuple[str, ...]]:
  """{name: features} of a directory; {'': ()} for a single vocabulary."""
  import tensorflow as tf
  if not is_named(uri):
    return {SINGLE: ()}
  path = _join(uri, INDEX_FILENAME)
  try:
    with tf.io.gfile.GFile(path) as f:
      index = json.load(f)
    named = index['vocabularies']
    return {str(n): tuple(str(f) for f in fs) for n, fs in named.items()}
  except (ValueError, KeyError, TypeError, AttributeError) as e:
    raise VocabularyError(f'vocabularies: {path} is not a vocabulary index '
                          f'({type(e).__name__}: {e})') from e


def write_index(uri: str, features: Mapping[str, Sequence[str]]) -> str:
  """Writes `vocabularies.json`; call it after every named vocabulary."""
  import tensorflow as tf
  path = _join(uri, INDEX_FILENAME)
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write(json.dumps({'format_version': FORMAT_VERSION, 'vocabularies': {
        n: list(fs) for n, fs in sorted(features.items())}}, indent=2,
                       sort_keys=True) + '\n')
  return path


def read(uri: str) -> Vocabularies:
  """Every vocabulary of `uri` (one-line VocabularyError when one is bad)."""
  index = read_index(uri)
  return Vocabularies(
      {name: vocabulary_file.read(directory_of(uri, name)) for name in index},
      index)


def read_compact(uri: str) -> Vocabularies:
  """`read`, each vocabulary held compactly (`CompactVocabulary`: tens of
  bytes a token, for vocabularies of millions)."""
  from tpu_embeddings.artifacts import compact_vocabulary
  index = read_index(uri)
  return Vocabularies(
      {name: compact_vocabulary.CompactVocabulary.read(directory_of(uri, name))
       for name in index}, index)


def write(uri: str, vocabularies: Vocabularies) -> None:
  """Writes each vocabulary, then the index (the single one: no index)."""
  for name in vocabularies.names:
    vocabulary_file.write(directory_of(uri, name), vocabularies[name])
  if vocabularies.names != (SINGLE,):
    write_index(uri, vocabularies.features)


def single(vocabulary: TokenCounts) -> Vocabularies:
  """The single vocabulary of skip-gram's artifacts."""
  return Vocabularies({SINGLE: vocabulary}, {SINGLE: ()})


def digest(vocabularies: Vocabularies) -> str:
  """A SHA-256 of every token and count, by name (resume keys); of a single
  vocabulary, the digest earlier releases keyed resumes by."""
  import hashlib
  lines = lambda v: '\n'.join(
      f'{t}\t{c}' for t, c in zip(v.tokens, v.counts)).encode('utf-8')
  if vocabularies.names == (SINGLE,):
    return hashlib.sha256(lines(vocabularies[SINGLE])).hexdigest()
  h = hashlib.sha256()
  for name in vocabularies.names:
    h.update(f'[{name}]\n'.encode('utf-8') + lines(vocabularies[name]))
  return h.hexdigest()
