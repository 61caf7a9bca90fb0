"""Tests for pipelines/local/lineage.py: a push that dies between rename and
record.

A real LocalDagRunner pipeline (importers + EmbeddingPusher) pushes version 1
and records it. The same pipeline then runs in a child process whose push is
killed (`os._exit`) right after `serving/2` is renamed into the push root,
before TFX publishes the pusher's execution: version 2 is served, but ML
Metadata holds only a RUNNING execution for it.
"""

import os
import subprocess
import sys

import pytest
from tfx import v1 as tfx
from tfx.orchestration import metadata
from tfx.types import standard_artifacts

from components.pusher.component import EmbeddingPusher
from pipelines.cli.main import main
from pipelines.local import home as home_lib
from pipelines.local import lineage
from tests.support import paths
from tests.support import pusher_exports
from tpu_embeddings.push_root import home_paths
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import served

# Each test shares a fixture that runs a trainer or pipeline in a subprocess.
pytestmark = pytest.mark.slow

REPO = paths.REPO


def _run_pusher_pipeline(home: str, inputs: str):
  """Importers of the exports in `inputs` (pusher_exports layout) + pusher."""
  source = {'source_model': os.path.join(inputs, 'trainer_model')}
  model = tfx.dsl.Importer(
      source_uri=source['source_model'],
      artifact_type=standard_artifacts.Model).with_id('model_importer')
  importers = [model] + [
      tfx.dsl.Importer(
          source_uri=os.path.join(inputs, name), artifact_type=kind,
          custom_properties=props).with_id(f'{name}_importer')
      for name, kind, props in (
          ('serving_model', standard_artifacts.Model, source),
          ('hub_module', standard_artifacts.Model, source),
          ('blessing', standard_artifacts.ModelBlessing, {'blessed': 1}))]
  pusher = EmbeddingPusher(
      serving_model=importers[1].outputs['result'],
      hub_module=importers[2].outputs['result'],
      model_blessing=importers[3].outputs['result'],
      push_root=home_lib.push_root(home))
  tfx.orchestration.LocalDagRunner().run(tfx.dsl.Pipeline(
      pipeline_name='lineage-test',
      pipeline_root=os.path.join(home, 'pipeline'),
      components=importers + [pusher],
      metadata_connection_config=metadata.sqlite_metadata_connection_config(
          os.path.join(home, 'metadata.sqlite'))))


def _crash_after_serving_rename(home: str, inputs: str):
  """Runs the pipeline; the push process dies once serving/<n> is in place."""
  from tpu_embeddings.push_root import publish
  original = publish.publish

  def die_after_rename(point, kind):
    if (point, kind) == ('renamed', 'serving'):
      os._exit(9)

  publish.publish = lambda *a, **k: original(*a, hook=die_after_rename, **k)
  _run_pusher_pipeline(home, inputs)


@pytest.fixture(scope='module')
def home(tmp_path_factory):
  base = tmp_path_factory.mktemp('lineage')
  inputs = str(base / 'inputs')
  pusher_exports.make_artifacts(inputs, 2.0, spans=(4,))
  home = str(base / 'home')
  _run_pusher_pipeline(home, inputs)
  # Validated again, against version 1 (else the pusher refuses).
  pusher_exports.write_report(os.path.join(inputs, 'blessing'), {},
                              served.identity(home_lib.push_root(home)))
  proc = subprocess.run(
      [sys.executable, '-c',
       'import sys; from tests.pipelines.local import test_lineage as t; '
       't._crash_after_serving_rename(sys.argv[1], sys.argv[2])',
       home, inputs], cwd=REPO, capture_output=True, text=True, timeout=300)
  assert proc.returncode == 9, proc.stderr[-2000:]
  return home


def test_crashed_push_is_served_but_not_recorded(home):
  root = home_lib.push_root(home)
  assert push_layout.list_versions(root, 'serving') == [1, 2]
  result = lineage.lineage(home)
  assert result['version'] == 2 and result['recorded'] is False
  manifest = push_layout.read_manifest(root, 'serving', 2)
  assert result['pipeline_run_id'] == manifest['pipeline_run_id'] != ''
  assert result['pusher_execution']['state'] == 'RUNNING'
  assert result['spans'] == [4]
  # The trainer Model the manifest names is found in ML Metadata.
  assert [m['uri'] for m in result['model']] == [
      home_paths.resolve(manifest['source_model'], root)]
  assert [s['node'] for s in result['steps']] == ['model_importer']


def test_recorded_version_still_walks_from_its_pushed_models(home):
  result = lineage.lineage(home, 1)
  assert result['recorded'] is True
  assert {p['pushed_version'] for p in result['pushed']} == {'1'}
  assert 'EmbeddingPusher' in [s['node'] for s in result['steps']]


def test_cli_names_the_run_that_pushed_it(home, capsys):
  assert main(['lineage', '--home', home, '--version', '2']) == 0
  out = capsys.readouterr().out
  assert out.startswith('pushed version 2 <- trained on span(s) 4'), out
  assert 'not recorded in ML Metadata: pushed by pipeline run' in out
  assert 'state RUNNING' in out
  assert main(['lineage', '--home', home, '--version', '7']) == 2
  assert 'neither recorded in ML Metadata nor complete' in (
      capsys.readouterr().err)


def test_lineage_of_a_damaged_version_says_so(home, capsys):
  """`pushed` and TF Serving see it; lineage must not trace it silently."""
  marker = os.path.join(home_lib.push_root(home), 'serving', '1',
                        'saved_model.pb')
  with open(marker, 'rb') as f:
    saved = f.read()
  os.remove(marker)
  try:
    assert main(['lineage', '--home', home, '--version', '1']) == 0
    out = capsys.readouterr().out
  finally:
    with open(marker, 'wb') as f:
      f.write(saved)
  assert ('  DAMAGED in the push root: serving/1/saved_model.pb is missing'
          in out.splitlines()), out
  assert lineage.lineage(home, 1)['damaged'] == []
