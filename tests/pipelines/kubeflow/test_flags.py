"""Which roots `compile` warns about: a path on this machine's disk, which
the cluster's pods cannot see, and not a URI of a file system they reach."""

import pytest

from pipelines.kubeflow import flags


@pytest.mark.parametrize('root', [
    '/home/me/tfx', 'tfx', './tfx', 'file:///home/me/tfx', 'FILE:///tmp',
    'C:/tfx'])
def test_a_local_root_is_named_with_its_flag(root):
  [line] = flags.local_root_warnings({'--push-root': root})
  assert line.startswith(f'warning: --push-root {root} is a local path: ')
  assert "the pods cannot see this machine's disk" in line


@pytest.mark.parametrize('root', [
    'gs://bucket/tfx', 's3://bucket/tfx', 'hdfs://namenode/tfx',
    'GS://bucket/tfx', 'abfss://container@account/tfx'])
def test_a_uri_the_pods_reach_is_not(root):
  assert flags.local_root_warnings({'--pipeline-root': root}) == []
