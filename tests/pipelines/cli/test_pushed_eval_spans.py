"""`pushed` shows on which eval span each version's metrics were measured,
and marks versions measured on another span than the served one."""

import json
import os

import pytest

from pipelines.cli import main as cli
from pipelines.local import home as home_lib
from tests.support import pushed_home
from tpu_embeddings.push_root import consumer
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import publish


@pytest.fixture(scope='module')
def pushed(tmp_path_factory):
  return pushed_home.push_two_versions(str(tmp_path_factory.mktemp('spans')))


def _cli(capsys, *argv):
  code = cli.main(list(argv))
  out, err = capsys.readouterr()
  return code, out, err


def _drop_eval_span(root, version):
  """Version `version`'s manifests as pushes wrote them before the eval span
  was recorded: without the field."""
  for kind in push_layout.KINDS:
    path = os.path.join(push_layout.version_dir(root, kind, version),
                        push_layout.MANIFEST_FILENAME)
    with open(path) as f:
      manifest = json.load(f)
    del manifest['eval_span']
    with open(path, 'w') as f:
      json.dump(manifest, f)


def _version_lines(out, version):
  """The lines `pushed` prints for `version`: its line and those under it."""
  lines = out.splitlines()
  first = next(i for i, l in enumerate(lines)
               if l.startswith(f'  {version:>5}  '))
  end = next((i for i in range(first + 1, len(lines))
              if not lines[i].startswith('         ')), len(lines))
  return lines[first:end]


def test_pushed_shows_the_eval_span_and_marks_other_spans(tmp_path, pushed,
                                                          capsys):
  home = str(tmp_path / 'home')
  root = home_lib.push_root(home)
  v = consumer.list_pushed(pushed['root'])[0]
  dirs = {'serving': v.serving_dir, 'hub': v.hub_dir}
  publish.publish(root, dirs, {'metrics': {'candidate': {'rmse': 1.2}}})
  _drop_eval_span(root, 1)
  publish.publish(root, dirs, {'metrics': {'candidate': {'rmse': 1.083}},
                               'eval_span': 1})
  publish.publish(root, dirs, {'metrics': {
      'candidate': {'rmse': 1.117}, 'baseline': {'rmse': 1.083}},
                               'eval_span': 2})
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert code == 0, out
  served, older, oldest = (_version_lines(out, n) for n in (3, 2, 1))
  assert ' eval span 2  rmse=1.117  (baseline then: rmse=1.083)' in served[0]
  assert '(served)' in served[0] and len(served) == 2
  assert ' eval span 1  rmse=1.083' in older[0]
  assert older[2] == ("         metrics measured on eval span 1, the served "
                      "version's on eval span 2: not comparable")
  assert ' eval span unknown  rmse=1.2' in oldest[0]
  assert oldest[2] == ("         metrics measured on an unknown eval span, "
                       "the served version's on eval span 2: may not "
                       "compare")
  code, out, _ = _cli(capsys, 'pushed', '--home', home, '--json')
  listed = {v['version']: v for v in json.loads(out)}
  assert [(listed[n]['eval_span'], listed[n]['same_eval_span_as_served'])
          for n in (1, 2, 3)] == [(None, None), (1, False), (2, True)]
  # A rollback serves version 2 again, measured on span 1: now version 3
  # is the one on another span.
  assert _cli(capsys, 'rollback', '--home', home, '--to', '2')[0] == 0
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert ' eval span 1  rmse=1.083' in _version_lines(out, 4)[0]
  assert len(_version_lines(out, 2)) == 2
  assert _version_lines(out, 3)[2] == (
      "         metrics measured on eval span 2, the served version's on "
      "eval span 1: not comparable")


def test_pushed_says_when_the_served_version_has_no_eval_span(tmp_path,
                                                              pushed, capsys):
  home = str(tmp_path / 'home')
  root = home_lib.push_root(home)
  v = consumer.list_pushed(pushed['root'])[0]
  dirs = {'serving': v.serving_dir, 'hub': v.hub_dir}
  publish.publish(root, dirs, {'eval_span': 1})
  publish.publish(root, dirs, {})
  _drop_eval_span(root, 2)
  code, out, _ = _cli(capsys, 'pushed', '--home', home)
  assert code == 0, out
  assert out.splitlines()[-1] == (
      "served version 2 does not record its eval span (pushed before it was "
      "recorded): the versions' metrics may have been measured on different "
      "eval data")
