"""What each row of a fault table (fault_table.py) must show.

For every row: the exit code of its fault, exactly one line on stderr that
names the component and the cause, every pushed version still intact with
no hidden leftovers (nothing half-written visible to consumers), version 1
still served, and the rerun continuing: the next run that gets going
completes the component that failed, and a trainer it stopped resumes from
the checkpoint it kept. The final run pushes a new version.
"""

from typing import Callable, Dict, List, Sequence

import pytest

EXIT_CODES = {'disk_full': 3, 'store_full': 3, 'read_only_home': 3,
              'read_only_push': 3, 'SIGINT': 130, 'SIGTERM': 143}
CAUSES = {'disk_full': 'no space left on device',
          'store_full': 'no space left on device',
          'read_only_home': 'read-only file system',
          'read_only_push': 'read-only file system'}


def rerun_of(results: Dict, index: int) -> Dict:
  """The first later run that started the components and whose own fault
  is not at the same component."""
  node = results['rows'][index]['row']['node']
  later: List[Dict] = results['rows'][index + 1:] + [results['final']]
  return next(r for r in later if '  FileBasedExampleGen' in r['stdout']
              and r['row']['node'] != node)


def check_line(result: Dict):
  row = result['row']
  lines = result['stderr'].splitlines()
  assert len(lines) == 1, result['stderr']
  line = lines[0]
  # Plain words: no SQL statement or protobuf quoted from ML Metadata.
  assert 'query' not in line and '{' not in line, line
  if row['fault'] == 'store_full':  # the file to free space for
    assert 'metadata.sqlite): free space there' in line, line
  if row['fault'] in ('SIGINT', 'SIGTERM'):
    assert line.startswith(f'stopped by {row["fault"]} during {row["node"]}: '
                           ), line
    assert line.endswith('; run the same command again to continue'), line
  elif row['node'] and row['fault'] != 'read_only_home':
    assert line.startswith(f'error: {row["node"]} failed: '
                           f'{CAUSES[row["fault"]]} ('), line
  else:
    assert line.startswith(f'error: {CAUSES[row["fault"]]} ('), line
  assert 'pushed version 1 is still served' in line or (
      row['fault'] == 'read_only_home'), line
  if row['node'] == 'EmbeddingTrainer':
    assert "kept the outputs of FileBasedExampleGen, Vocabulary (a rerun " \
        "reuses them) and the trainer's checkpoint at step " in line, line


def check_row(results: Dict, index: int):
  result = results['rows'][index]
  row = result['row']
  assert result['fired'], f'{row["name"]}: the fault never fired'
  assert result['exit_code'] == EXIT_CODES[row['fault']], (
      result['exit_code'], result['stderr'], result['stdout'][-2000:])
  check_line(result)
  view = result['push_root']
  assert set(view['states'].values()) == {'intact'}, view
  assert view['served'] == 1 and view['hidden'] == [], view
  if row['node']:
    rerun = rerun_of(results, index)
    assert f'  {row["node"]:<22} done in' in rerun['stdout'], (
        rerun['stdout'][-2000:])
  if row['node'] == 'EmbeddingTrainer':
    check_trainer_resumed(results, index)


def check_trainer_resumed(results: Dict, index: int):
  """The checkpoint the stopped or failed trainer kept is where a later
  trainer started."""
  trainer = results['rows'][index]['trainer']
  kept = {name: m['newest'] for name, m in trainer['models'].items()
          if m['resumed_from_step'] is None and m['newest']}
  kept.update(trainer['kept'])
  assert kept and max(kept.values()) > 0, trainer
  final = results['final']['trainer']['models']
  resumed = [m['resumed_from_step'] for m in final.values()
             if m['resumed_from_step']]
  assert resumed and min(resumed) >= min(kept.values()), (trainer, final)


def check_final(results: Dict):
  final = results['final']
  assert final['exit_code'] == 0, final['stderr'] + final['stdout'][-2000:]
  assert final['stderr'] == '', final['stderr']
  view = final['push_root']
  assert set(view['states'].values()) == {'intact'}, view
  assert view['served'] > 1, view
  assert f'pushed: version {view["served"]}' in final['stdout']


def table_tests(rows: Sequence, timeout: int) -> List[Callable]:
  """The tests of a fault table's module, whose `results` fixture holds what
  `fault_table.run_table` returned: the baseline, each row, the final run.
  """

  @pytest.mark.timeout(timeout)
  def test_the_baseline_pushes_version_1(results):
    assert results['baseline']['exit_code'] == 0, results['baseline']
    assert results['baseline']['push_root']['served'] == 1

  @pytest.mark.timeout(timeout)
  @pytest.mark.parametrize('index', range(len(rows)),
                           ids=[row.name for row in rows])
  def test_each_fault(results, index):
    check_row(results, index)

  @pytest.mark.timeout(timeout)
  def test_the_rerun_without_a_fault_pushes_version_2(results):
    check_final(results)

  return [test_the_baseline_pushes_version_1, test_each_fault,
          test_the_rerun_without_a_fault_pushes_version_2]
