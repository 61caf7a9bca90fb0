"""LocalDagRunner run of corpus ExampleGen + Vocabulary on a 2-span corpus."""

import collections
import glob
import os
import sqlite3

import pytest
from tfx import v1 as tfx

from components.corpus_example_gen.component import corpus_example_gen
from components.vocabulary.component import VocabularyGen
from pipelines import demo_data
from tpu_embeddings.artifacts import examples_io
from tpu_embeddings.artifacts import vocabulary_file


def _run(tmp_path, data_root, name='foundation', **gen_kwargs):
  gen = corpus_example_gen(str(data_root), **gen_kwargs)
  vocab = VocabularyGen(examples=gen.outputs['examples'], min_count=2)
  home = tmp_path / 'home'
  pipeline = tfx.dsl.Pipeline(
      pipeline_name=name,
      pipeline_root=str(home / 'pipeline'),
      components=[gen, vocab],
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(
              str(home / 'metadata.sqlite'))),
      beam_pipeline_args=['--direct_num_workers=1'])
  tfx.orchestration.LocalDagRunner().run(pipeline)
  examples_uri = _latest(home, 'FileBasedExampleGen', 'examples')
  vocab_uri = _latest(home, 'VocabularyGen', 'vocabulary')
  return home, examples_uri, vocab_uri


def _latest(home, component, output):
  dirs = sorted(glob.glob(str(home / 'pipeline' / component / output /
                              '*')), key=lambda p: int(os.path.basename(p)))
  return dirs[-1]


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
  root = tmp_path_factory.mktemp('corpus')
  demo_data.generate(str(root), spans=2, seed=3,
                     shape=demo_data.CorpusShape(lines_per_span=200))
  return root


def test_latest_span_and_vocabulary_counts(tmp_path, corpus):
  home, examples_uri, vocab_uri = _run(tmp_path, corpus)
  # Examples come from span 2 only: every line of span 2, none of span 1.
  got = sorted(' '.join(s) for split in ('train', 'eval')
               for s in examples_io.read_sequences(examples_uri, split))
  span2 = open(corpus / 'span-2' / demo_data.CORPUS_FILENAME).read().split('\n')
  assert got == sorted(l for l in span2 if l)
  train = list(examples_io.read_sequences(examples_uri, 'train'))
  assert 0 < len(train) < len(got)
  # Span property recorded in ML Metadata.
  db = sqlite3.connect(str(home / 'metadata.sqlite'))
  spans = db.execute(
      "SELECT int_value FROM ArtifactProperty WHERE name='span' "
      "AND is_custom_property=1").fetchall()
  assert (2,) in spans
  # Vocabulary = a plain Python count of the train lines, min_count=2.
  counts = collections.Counter(t for s in train for t in s)
  expected = sorted(((t, c) for t, c in counts.items() if c >= 2),
                    key=lambda tc: (-tc[1], tc[0].encode()))
  vocab = vocabulary_file.read(vocab_uri)
  assert list(zip(vocab.tokens, vocab.counts)) == expected


def test_span_window_reads_earlier_spans(tmp_path, corpus):
  _, examples_uri, _ = _run(tmp_path, corpus, name='window', span_window=2)
  n = sum(1 for split in ('train', 'eval')
          for _ in examples_io.read_sequences(examples_uri, split))
  assert n == 400
