"""EmbeddingPusher run for real: LocalDagRunner with SQLite ML Metadata."""

import json
import os

import pytest
from tfx import v1 as tfx
from tfx.orchestration import metadata
from tfx.types import standard_artifacts

from components import keys
from components.pusher import executor
from components.pusher.component import EmbeddingPusher
from tests.support import pusher_exports
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import served


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
  base = str(tmp_path_factory.mktemp('inputs'))
  serving, hub, blessing = pusher_exports.make_artifacts(
      base, 2.0, spans=(5, 6), metrics={'neighbor_recall': 0.75})
  not_blessed = os.path.join(base, 'not_blessed')
  os.makedirs(not_blessed)
  open(os.path.join(not_blessed, 'NOT_BLESSED'), 'w').close()
  return {
      'serving': serving.uri,
      'hub': hub.uri,
      'blessing': blessing.uri,
      'not_blessed': not_blessed,
      'source_model': serving.get_string_custom_property('source_model'),
  }


def _run(tmp_path, inputs, blessed: bool, push_root: str, name: str):
  source = {'source_model': inputs['source_model']}
  serving = tfx.dsl.Importer(
      source_uri=inputs['serving'], artifact_type=standard_artifacts.Model,
      custom_properties=source).with_id('serving_importer')
  hub = tfx.dsl.Importer(
      source_uri=inputs['hub'], artifact_type=standard_artifacts.Model,
      custom_properties=source).with_id('hub_importer')
  blessing = tfx.dsl.Importer(
      source_uri=inputs['blessing' if blessed else 'not_blessed'],
      artifact_type=standard_artifacts.ModelBlessing,
      custom_properties={'blessed': int(blessed)}).with_id('blessing_importer')
  pusher = EmbeddingPusher(
      serving_model=serving.outputs['result'],
      hub_module=hub.outputs['result'],
      model_blessing=blessing.outputs['result'],
      push_root=push_root,
      keep_versions=0)
  db = str(tmp_path / 'metadata.sqlite')
  pipeline = tfx.dsl.Pipeline(
      pipeline_name=name,
      pipeline_root=str(tmp_path / 'pipeline_root'),
      components=[serving, hub, blessing, pusher],
      metadata_connection_config=(
          tfx.orchestration.metadata.sqlite_metadata_connection_config(db)))
  tfx.orchestration.LocalDagRunner().run(pipeline)
  with metadata.Metadata(
      tfx.orchestration.metadata.sqlite_metadata_connection_config(db)) as m:
    return {
        key: [a for a in m.store.get_artifacts_by_type('PushedModel')
              if key in a.uri]
        for key in (keys.PUSHED_SERVING, keys.PUSHED_HUB)
    }


def test_blessed_pushes_both_with_equal_versions(tmp_path, inputs):
  home = os.path.dirname(inputs['blessing'])  # where the inputs are
  root = os.path.join(home, 'pushed')
  for run in range(2):
    # Validated against what is served now, as the validator records it.
    # The second validation's report records its eval data's span; the
    # first one's, as before spans were recorded, none.
    pusher_exports.write_report(inputs['blessing'], {'neighbor_recall': 0.75},
                                served.identity(root),
                                eval_span=6 if run else None)
    pushed = _run(tmp_path, inputs, True, root, 'push-blessed')
    for key, artifacts in pushed.items():
      latest = max(artifacts, key=lambda a: a.id)
      props = latest.custom_properties
      assert props['pushed'].int_value == 1
      assert props['pushed_version'].string_value == str(run + 1)
      kind = 'serving' if key == keys.PUSHED_SERVING else 'hub'
      assert props['pushed_destination'].string_value == (
          push_layout.version_dir(root, kind, run + 1))
      with open(os.path.join(latest.uri, 'manifest.json')) as f:
        assert json.load(f)['version'] == run + 1
  for kind in push_layout.KINDS:
    assert push_layout.list_versions(root, kind) == [1, 2]
    m = push_layout.read_manifest(root, kind, 2)
    # Both in the home of the push root: recorded relative to it.
    assert m['home'] == home
    assert m['source_model'] == 'trainer_model'
    assert m['spans'] == [5, 6]
    assert m['metrics'] == {'neighbor_recall': 0.75}
    assert m['eval_span'] == 6
    assert push_layout.read_manifest(root, kind, 1)['eval_span'] is None
    assert m['blessing'] == 'blessing'
    assert m['pipeline_run_id']  # Set by the runner for each run.
  assert (push_layout.read_manifest(root, 'serving', 1)['pipeline_run_id'] !=
          push_layout.read_manifest(root, 'serving', 2)['pipeline_run_id'])
  assert pusher_exports.serving_scale(
      push_layout.version_dir(root, 'serving', 2)) == 2.0
  assert pusher_exports.hub_scale(
      push_layout.version_dir(root, 'hub', 2)) == 2.0


def test_not_blessed_writes_nothing(tmp_path, inputs):
  root = str(tmp_path / 'push')
  pushed = _run(tmp_path, inputs, False, root, 'push-not-blessed')
  for artifacts in pushed.values():
    assert len(artifacts) == 1
    assert artifacts[0].custom_properties['pushed'].int_value == 0
    assert 'pushed_version' not in artifacts[0].custom_properties
  assert not os.path.exists(root)


def _do(tmp_path, serving, hub, blessing, **props):
  outputs = {k: [standard_artifacts.PushedModel()]
             for k in (keys.PUSHED_SERVING, keys.PUSHED_HUB)}
  for k, (a,) in outputs.items():
    a.uri = str(tmp_path / k)
  executor.Executor().Do(
      {keys.SERVING_MODEL: [serving], keys.HUB_MODULE: [hub],
       keys.MODEL_BLESSING: [blessing]}, outputs, props)
  return {k: v[0] for k, v in outputs.items()}


def test_executor_refuses_exports_of_different_models(tmp_path):
  serving, hub, blessing = pusher_exports.make_artifacts(str(tmp_path), 2.0)
  hub.set_string_custom_property('source_model', '/models/other')
  root = str(tmp_path / 'push')
  with pytest.raises(ValueError, match='push exports of the same trainer'):
    _do(tmp_path, serving, hub, blessing, push_root=root)
  assert not os.path.exists(root)
  with pytest.raises(push_layout.PushLayoutError, match='contains ".."'):
    _do(tmp_path, serving, serving, blessing, push_root=f'{tmp_path}/../x')
  with pytest.raises(ValueError, match='keep_versions must be an integer'):
    EmbeddingPusher(serving_model=None, hub_module=None, model_blessing=None,
                    push_root=root, keep_versions=-1)
  with pytest.raises(push_layout.PushLayoutError, match='non-empty'):
    EmbeddingPusher(serving_model=None, hub_module=None, model_blessing=None,
                    push_root='')


def test_a_verdict_against_a_version_no_longer_served_pushes_nothing(
    tmp_path):
  """The repro of a cached blessing: validated when nothing was served,
  pushed after another run pushed version 1."""
  root = str(tmp_path / 'push')
  serving, hub, blessing = pusher_exports.make_artifacts(
      str(tmp_path / 'stale'), 2.0, validated_against=None)
  better = pusher_exports.make_artifacts(str(tmp_path / 'better'), 3.0,
                                         validated_against=None)
  _do(tmp_path / 'out1', *better, push_root=root)
  with pytest.raises(served.ServedVersionChanged,
                     match='nothing pushed, the served version changed '
                     'since validation .validated against no version; '
                     'served now: version 1'):
    _do(tmp_path / 'out2', serving, hub, blessing, push_root=root)
  assert push_layout.numbered(root, 'serving') == [1]
  assert pusher_exports.serving_scale(
      push_layout.version_dir(root, 'serving', 1)) == 3.0
  # Validated again, against version 1: pushed.
  pusher_exports.write_report(blessing.uri, {}, served.identity(root))
  out = _do(tmp_path / 'out3', serving, hub, blessing, push_root=root)
  assert out[keys.PUSHED_SERVING].get_string_custom_property(
      keys.PUSHED_VERSION) == '2'


def test_a_blessing_that_does_not_say_what_it_was_validated_against(
    tmp_path):
  serving, hub, blessing = pusher_exports.make_artifacts(str(tmp_path), 2.0)
  with open(os.path.join(blessing.uri, 'report.json'), 'w') as f:
    json.dump({'metrics': {}}, f)
  root = str(tmp_path / 'push')
  with pytest.raises(ValueError, match='does not record the served version '
                     'it was validated against'):
    _do(tmp_path, serving, hub, blessing, push_root=root)
  assert push_layout.numbered(root, 'serving') == []


def _pushed_once(tmp_path, root):
  """Exports that record their exporter settings, pushed as version 1."""
  serving, hub, blessing = pusher_exports.make_artifacts(
      str(tmp_path / 'in'), 2.0, validated_against=None)
  for artifact in (serving, hub):
    artifact.set_string_custom_property(keys.EXPORT_CONFIG, '{"oov": 1}')
  _do(tmp_path / 'out1', serving, hub, blessing, push_root=root)
  return serving, hub, blessing


def test_exports_of_the_served_model_are_not_pushed_again(tmp_path):
  """A rerun with unchanged inputs validates again (the served version is
  new) and exports again, from the same trained Model with the same
  exporter settings: version 1 already serves that, so nothing is pushed.
  Other exporter settings are a new version."""
  root = str(tmp_path / 'push')
  serving, hub, blessing = _pushed_once(tmp_path, root)
  pusher_exports.write_report(blessing.uri, {}, served.identity(root))
  out = _do(tmp_path / 'out2', serving, hub, blessing, push_root=root)
  for artifact in out.values():
    assert artifact.get_int_custom_property(keys.PUSHED) == 0
    assert artifact.get_string_custom_property(keys.ALREADY_SERVED) == '1'
  assert push_layout.numbered(root, 'serving') == [1]
  assert push_layout.numbered(root, 'hub') == [1]
  for artifact in (serving, hub):
    artifact.set_string_custom_property(keys.EXPORT_CONFIG, '{"oov": 2}')
  out = _do(tmp_path / 'out3', serving, hub, blessing, push_root=root)
  assert out[keys.PUSHED_SERVING].get_string_custom_property(
      keys.PUSHED_VERSION) == '2'
  assert push_layout.read_manifest(root, 'hub', 2)['export_config'] == (
      '{"oov": 2}')


def test_a_damaged_served_copy_of_the_model_is_pushed_anew(tmp_path):
  root = str(tmp_path / 'push')
  serving, hub, blessing = _pushed_once(tmp_path, root)
  saved_model = os.path.join(push_layout.version_dir(root, 'serving', 1),
                             'saved_model.pb')
  with open(saved_model, 'r+b') as f:  # same size, other bytes
    first = f.read(1)
    f.seek(0)
    f.write(bytes([first[0] ^ 0xFF]))
  pusher_exports.write_report(blessing.uri, {}, served.identity(root))
  out = _do(tmp_path / 'out2', serving, hub, blessing, push_root=root)
  assert out[keys.PUSHED_SERVING].get_string_custom_property(
      keys.PUSHED_VERSION) == '2'
