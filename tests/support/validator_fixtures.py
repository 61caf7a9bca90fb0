"""Small real inputs for the CheckpointValidator tests.

A demo corpus with planted topics (Examples + vocabulary + related pairs),
tables of known quality, and a pushed baseline made by the real exporters.
"""

import collections
import os
from typing import Dict

import numpy as np

from pipelines import demo_data
from tests.support import artifact_fixtures
from tests.support import exporter_fixtures
from tpu_embeddings.artifacts.checkpoint_restore import restore_for_serving
from tpu_embeddings.core import file_system
from tpu_embeddings.exports import table_serving
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import manifest as manifest_lib

SHAPE = demo_data.CorpusShape(topics=4, tokens_per_topic=20, filler_tokens=5,
                              lines_per_span=300, related_per_topic=5)


def write_corpus(base: str) -> Dict[str, object]:
  """Examples (train = span 1, eval = span 2), vocabulary, related pairs."""
  train = [l.split() for l in demo_data.span_lines(1, SHAPE)]
  eval_ = [l.split() for l in demo_data.span_lines(2, SHAPE)][:150]
  examples = artifact_fixtures.write_examples(
      os.path.join(base, 'examples'), {'train': train, 'eval': eval_})
  counts = collections.Counter(t for s in train for t in s)
  vocab_uri = os.path.join(base, 'vocabulary')
  vocab = artifact_fixtures.write_vocabulary(vocab_uri, counts)
  related = os.path.join(base, demo_data.RELATED_PAIRS_FILENAME)
  with open(related, 'w', encoding='utf-8') as f:
    f.writelines(f'{a}\t{b}\n' for a, b in demo_data.related_pairs(SHAPE))
  return {'examples': examples, 'vocabulary': vocab_uri, 'vocab': vocab,
          'related': related}


def topic_table(tokens, noise: float, dim: int = 8, seed: int = 0
                ) -> np.ndarray:
  """Rows near orthogonal per-topic directions; more noise = a worse model."""
  rng = np.random.default_rng(seed)
  topics = sorted({t.split('-')[0] for t in tokens})
  center = {t: np.eye(dim)[i % dim] for i, t in enumerate(topics)}
  return np.stack([center[t.split('-')[0]] + noise * rng.normal(size=dim)
                   for t in tokens]).astype(np.float32)


def random_table(tokens, scale: float, dim: int = 8, seed: int = 1
                 ) -> np.ndarray:
  rng = np.random.default_rng(seed)
  return (scale * rng.normal(size=(len(tokens), dim))).astype(np.float32)


def push_baseline(push_root: str, model_uri: str, version: int = 1) -> str:
  """Exports `model_uri` and places it as a complete pushed version."""
  restored = restore_for_serving(model_uri)
  dirs = {kind: push_layout.version_dir(push_root, kind, version)
          for kind in push_layout.KINDS}
  exporter_fixtures.export_hub_module(
      exporter_fixtures.from_variable(restored.table('tokens')),
      restored.vocabulary, dirs['hub'])
  table_serving.export_serving_model(restored, dirs['serving'])
  write_manifests(dirs, version, model_uri)
  return dirs['serving']


def write_manifests(dirs: Dict[str, str], version: int, model_uri: str):
  """The manifest of each pushed version folder in `dirs` ({kind: dir}),
  naming exactly the files there (a version is its manifest)."""
  for kind, path in dirs.items():
    files = file_system.list_files(path)
    manifest = manifest_lib.build(
        version, kind,
        {rel: manifest_lib.sha256_file(os.path.join(path, rel))
         for rel in files},
        source_model=model_uri, sizes=integrity.file_sizes(path, files),
        pushed_at='2020-01-01T00:00:00Z')
    with open(os.path.join(path, push_layout.MANIFEST_FILENAME), 'w') as f:
      f.write(manifest_lib.dumps(manifest))


def publish_baseline(push_root: str, model_uri: str, staging: str) -> int:
  """Exports `model_uri` and publishes it with the pusher; returns the version.
  """
  from tpu_embeddings.push_root import publish
  restored = restore_for_serving(model_uri)
  dirs = {kind: os.path.join(staging, kind) for kind in push_layout.KINDS}
  exporter_fixtures.export_hub_module(
      exporter_fixtures.from_variable(restored.table('tokens')),
      restored.vocabulary, dirs['hub'])
  table_serving.export_serving_model(restored, dirs['serving'])
  return publish.publish(push_root, dirs,
                         {'source_model': model_uri}).version


def data_file(version_dir: str) -> str:
  """The one `variables.data-*` file of an export."""
  variables = os.path.join(version_dir, 'variables')
  names = [n for n in os.listdir(variables) if n.startswith('variables.data-')]
  assert len(names) == 1, names
  return os.path.join(variables, names[0])


def flip_bytes(path: str, count: int = 16):
  """Inverts `count` bytes in the middle of `path` (its size is unchanged)."""
  with open(path, 'r+b') as f:
    data = bytearray(f.read())
    middle = len(data) // 2
    for i in range(middle, min(middle + count, len(data))):
      data[i] ^= 0xFF
    f.seek(0)
    f.write(data)
