"""The CLI through a table of machine failures: a full file system at each
component (a small tmpfs, filled), a read-only push root and a read-only
home (tmpfs remounted read-only), in a chain (tests/support/fault_table.py);
tests/support/fault_checks.py says what each row must show.

The mounts need a mount namespace of their own: `unshare -rm` (user and mount
namespaces; no privilege needed where unprivileged user namespaces are on).
"""

import json
import subprocess
import sys

import pytest

from tests.support import fault_checks
from tests.support import fault_table
from tests.support import paths


@pytest.fixture(scope='module')
def results(tmp_path_factory):
  probe = subprocess.run(['unshare', '-rm', 'true'], capture_output=True,
                         text=True)
  if probe.returncode:
    pytest.skip('needs user and mount namespaces (`unshare -rm true` says: '
                f'{probe.stderr.strip()}) to mount small file systems')
  work = tmp_path_factory.mktemp('faults')
  subprocess.run(['unshare', '-rm', sys.executable, '-m',
                  'tests.support.fault_table', 'disk', str(work)],
                 cwd=paths.REPO, check=True, timeout=3000)
  with open(work / 'results.json') as f:
    return json.load(f)


(test_the_baseline_pushes_version_1, test_each_fault,
 test_the_rerun_without_a_fault_pushes_version_2) = fault_checks.table_tests(
     fault_table.DISK_ROWS, timeout=2400)
