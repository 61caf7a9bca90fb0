"""Two versions pushed from real exports, for the consumer and CLI tests.

Models come from `write_tpu_format_model` + `restore_for_serving`; they are
exported with the exporter's own functions and published with the pusher's.
"""

import os

import numpy as np

from pipelines.local import home as home_lib
from tests.support import exporter_fixtures
from tests.support.artifact_fixtures import write_tpu_format_model
from tpu_embeddings.artifacts.checkpoint_restore import restore_for_serving
from tpu_embeddings.exports import table_serving
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import publish

TOKENS = ['the', 'cat', 'sat', 'on', 'mat', 'dog', 'ran']
DIM = 8


def export(base: str, seed: int):
  rng = np.random.default_rng(seed)
  table = rng.normal(size=(len(TOKENS), DIM)).astype(np.float32)
  model_uri = os.path.join(base, f'model_{seed}')
  write_tpu_format_model(model_uri, TOKENS, table=table)
  restored = restore_for_serving(model_uri)
  dirs = {'serving': os.path.join(base, f'serving_{seed}'),
          'hub': os.path.join(base, f'hub_{seed}')}
  table_serving.export_serving_model(restored, dirs['serving'])
  exporter_fixtures.export_hub_module(
      exporter_fixtures.from_variable(restored.table('tokens')),
      restored.vocabulary, dirs['hub'])
  return model_uri, table, dirs


def push_two_versions(base: str):
  """{'home', 'root', 'tables': {version: table}} of versions 1 and 2."""
  home = os.path.join(base, 'home')
  root = home_lib.push_root(home)
  tables = {}
  for seed in (1, 2):
    model_uri, table, dirs = export(base, seed)
    result = publish.publish(root, dirs, {
        'source_model': model_uri, 'spans': [seed],
        'metrics': {'neighbor_recall': seed / 10},
        'pipeline_run_id': f'r{seed}'})
    tables[result.version] = table
  return {'home': home, 'root': root, 'tables': tables}


def copy_home(source_root: str, home: str) -> str:
  """Re-publishes every version under `source_root` into `home`'s push root
  (same numbers, spans and metrics): a private copy to damage or roll back.
  Returns the new push root."""
  root = home_lib.push_root(home)
  for v in consumer.list_pushed(source_root):
    publish.publish(root, {'serving': v.serving_dir, 'hub': v.hub_dir},
                    {'spans': v.manifest['spans'],
                     'metrics': v.manifest['metrics']})
  return root


SENTENCES = ['the cat sat', 'dog ran on the mat', 'zebra cat', '']


def sentence_vector(table, sentence):
  ids = {t: i for i, t in enumerate(TOKENS)}
  tokens = sentence.split()
  if not tokens:
    return np.zeros(DIM, np.float32)
  total = sum((table[ids[t]] for t in tokens if t in ids),
              np.zeros(DIM, np.float32))
  return total / np.sqrt(len(tokens))


def cosine_neighbors(table, token, k):
  i = TOKENS.index(token)
  norms = np.linalg.norm(table, axis=1)
  scores = table @ table[i] / (norms * norms[i])
  scores[i] = -np.inf
  order = np.argsort(-scores, kind='stable')[:k]
  return [TOKENS[j] for j in order], scores[order]
