"""Runs the CheckpointValidator executor on real artifacts, for its tests.

`run` calls `Executor.Do` and returns the blessing and the report;
`write_model` writes a TPU-format model of the corpus's vocabulary.
"""

import json
import os

from tfx.types import standard_artifacts

from components import artifact_types
from components import keys
from components.validator import executor
from tests.support import artifact_fixtures


def artifact(cls, uri):
  """A `cls` artifact at `uri`."""
  a = cls()
  a.uri = uri
  return a


def run(corpus, model_uri, out_uri, span=None, **props):
  """Executor.Do with real artifacts; returns (blessing, report). `span`:
  the Examples' span, as ExampleGen sets it (none by default)."""
  examples = artifact(standard_artifacts.Examples, corpus['examples'])
  examples.split_names = '["train", "eval"]'
  if span is not None:
    examples.set_int_custom_property(keys.SPAN, span)
  blessing = artifact(standard_artifacts.ModelBlessing, out_uri)
  os.makedirs(out_uri, exist_ok=True)
  props.setdefault('related_pairs_file', corpus['related'])
  # The hand-made topic tables of these tests are no skip-gram models: their
  # held-out loss is above a frequency-only model's by construction. That
  # gate is tested on trained tables (test_gates_on_real_corpora.py).
  props.setdefault('beat_frequency_model', False)
  push_root = props.pop('push_root', '')
  executor.Executor().Do(
      {keys.MODEL: [artifact(standard_artifacts.Model, model_uri)],
       keys.EXAMPLES: [examples],
       keys.VOCABULARY: [artifact(artifact_types.Vocabulary,
                                  corpus['vocabulary'])]},
      {keys.BLESSING: [blessing]},
      {'config': json.dumps(props), 'push_root': push_root})
  with open(os.path.join(out_uri, 'report.json')) as f:
    return blessing, json.load(f)


def write_model(tmp_path, corpus, name, table=None, spec=None):
  """A TPU-format model of the corpus's vocabulary at `tmp_path / name` (its
  tokens and counts, as the trainer copies them into a Model)."""
  uri = str(tmp_path / name)
  artifact_fixtures.write_tpu_format_model(uri, corpus['vocab'].tokens,
                                           spec=spec, table=table,
                                           counts=corpus['vocab'].counts)
  return uri


def failed_gates(report):
  """{gate name: reason} of the report's failed gates."""
  return {g['name']: g['reason'] for g in report['gates'] if not g['passed']}
