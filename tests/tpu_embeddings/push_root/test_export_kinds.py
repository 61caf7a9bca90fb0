"""The export-kind registry (tpu_embeddings/artifacts/export_kinds.py) drives
the push root: its folders, markers, publish order and integrity checks."""

import os
import shutil

import pytest

from tests.support import pusher_exports
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.push_root import integrity
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import publish
from tpu_embeddings.push_root import status as push_status

_WRITERS = {export_kinds.SERVING.name: pusher_exports.write_serving_model,
            export_kinds.HUB.name: pusher_exports.write_hub_module}


@pytest.fixture
def root(tmp_path):
  root = str(tmp_path / 'pushed')
  publish.publish(root, {kind.name: _WRITERS[kind.name](
      str(tmp_path / kind.name), 1.0) for kind in export_kinds.KINDS})
  return root


def test_every_registered_kind_has_a_writer_here():
  assert set(_WRITERS) == set(export_kinds.NAMES)


def test_a_version_holds_one_folder_per_registered_kind(root):
  folders = [n for n in os.listdir(root) if not n.startswith('.')]
  assert sorted(folders) == sorted(export_kinds.NAMES)
  for kind in export_kinds.KINDS:
    directory = os.path.join(root, kind.name, '1')
    assert os.path.isfile(os.path.join(directory, kind.marker))
    assert push_layout.read_manifest(root, kind.name, 1)['kind'] == kind.name


def test_kinds_move_into_place_in_publish_order(tmp_path):
  renamed = []
  publish.publish(
      str(tmp_path / 'pushed'),
      {kind.name: _WRITERS[kind.name](str(tmp_path / kind.name), 1.0)
       for kind in export_kinds.KINDS},
      hook=lambda point, kind: renamed.append(kind) if point == 'renamed'
      else None)
  orders = [export_kinds.get(kind).publish_order for kind in renamed]
  assert orders == sorted(orders) and len(renamed) == len(export_kinds.KINDS)
  assert renamed[-1] == export_kinds.served() == push_layout.SERVED


@pytest.mark.parametrize('name', export_kinds.NAMES)
def test_integrity_covers_every_registered_kind(root, name):
  kind = export_kinds.get(name)
  os.remove(os.path.join(root, name, '1', kind.marker))
  problems = integrity.version_problems(root, 1)
  assert f'{name}/1/{kind.marker} is missing' in problems
  assert not push_layout.is_complete(root, 1)


@pytest.mark.parametrize('name', export_kinds.NAMES)
def test_a_version_missing_a_required_kind_is_damaged(root, name):
  shutil.rmtree(os.path.join(root, name, '1'))
  problems = integrity.version_problems(root, 1)
  assert f'{name}/1 is missing' in problems
  states = {s.version: s.state for s in push_status.scan(root)}
  assert states[1] != push_status.INTACT


def test_sources_are_checked_with_the_kinds_checker(tmp_path):
  sources = {kind.name: str(tmp_path / f'empty-{kind.name}')
             for kind in export_kinds.KINDS}
  for path in sources.values():
    os.makedirs(path)
  first = export_kinds.KINDS[0]
  with pytest.raises(FileNotFoundError, match=(
      f'{first.name} source .* has no {first.marker}; expected a '
      f'{first.description}')):
    publish.publish(str(tmp_path / 'pushed'), sources)
  assert not os.path.exists(tmp_path / 'pushed' / first.name / '1')


def test_an_unknown_kind_is_refused_by_name():
  with pytest.raises(export_kinds.UnknownKindError, match="'int8'"):
    export_kinds.get('int8')
