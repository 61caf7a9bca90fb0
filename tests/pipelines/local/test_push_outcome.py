"""The run summary of a cached pusher says nothing new was pushed and which
version is served, not the push an earlier run made."""

import os

from ml_metadata.proto import metadata_store_pb2

from pipelines.local import metadata_queries
from pipelines.local import push_outcome
from pipelines.local import runner as local_runner

EXECUTION = metadata_store_pb2.Execution


def _pusher_outputs(state):
  """The pusher's outputs as an earlier run pushed them as version 2."""
  outputs = {}
  for kind in ('pushed_serving', 'pushed_hub'):
    artifact = metadata_store_pb2.Artifact()
    artifact.custom_properties['pushed'].int_value = 1
    artifact.custom_properties['pushed_version'].string_value = '2'
    artifact.custom_properties['pushed_destination'].string_value = (
        f'/h/pushed/{kind}/2')
    outputs[kind] = metadata_queries.Output(
        'EmbeddingPusher', kind, artifact,
        EXECUTION(last_known_state=state))
  return outputs


def _summary(tmp_path, state, blessed=True):
  root = tmp_path / 'pushed'
  for version in ('1', '2', '4'):  # 4: a rollback re-published 1
    os.makedirs(root / 'serving' / version)
  summary = {'paths': {'metadata': '/h/metadata.sqlite'}, 'blessed': blessed}
  summary.update(push_outcome.read(_pusher_outputs(state), str(root)))
  return summary


def _pushed_lines(summary):
  return [line for line in local_runner.format_summary(summary).splitlines()
          if line.startswith('pushed')]


def test_a_cached_pusher_names_the_served_version_not_an_old_push(tmp_path):
  summary = _summary(tmp_path, EXECUTION.CACHED)
  assert _pushed_lines(summary) == [
      'pushed: nothing new to push (version 4 is served)']
  assert summary['pushed_version'] is None


def test_a_cached_pusher_of_a_model_not_blessed_says_so(tmp_path):
  summary = _summary(tmp_path, EXECUTION.CACHED, blessed=False)
  assert _pushed_lines(summary) == ['pushed: nothing (model not blessed)']


def test_a_pusher_that_ran_reports_its_push(tmp_path):
  summary = _summary(tmp_path, EXECUTION.COMPLETE)
  text = local_runner.format_summary(summary)
  assert 'pushed: version 2\n  pushed_hub: /h/pushed/pushed_hub/2' in text
  assert summary['pushed_version'] == '2'


def test_nothing_served_after_a_cached_pusher_is_said(tmp_path):
  summary = {'paths': {'metadata': '/h/metadata.sqlite'}, 'blessed': True}
  summary.update(push_outcome.read(_pusher_outputs(EXECUTION.CACHED),
                                   str(tmp_path / 'none')))
  assert _pushed_lines(summary) == [
      'pushed: nothing new to push (no version is served)']


def test_a_pusher_that_found_its_model_served_names_that_version(tmp_path):
  outputs = _pusher_outputs(EXECUTION.COMPLETE)
  for output in outputs.values():
    props = output.artifact.custom_properties
    props['pushed'].int_value = 0
    del props['pushed_version']
    props['already_served_version'].string_value = '3'
  summary = {'paths': {'metadata': '/h/metadata.sqlite'}, 'blessed': True}
  summary.update(push_outcome.read(outputs, str(tmp_path / 'pushed')))
  assert _pushed_lines(summary) == [
      'pushed: nothing new to push (version 3 already serves this model)']
  assert summary['pushed_version'] is None
