"""The CLI through a table of stops: SIGINT at each component (to the process
group, as Ctrl-C does) and SIGTERM during training (to the process alone, as
Kubernetes or `docker stop` do), in a chain (tests/support/fault_table.py);
tests/support/fault_checks.py says what each row must show.
"""

import pytest

from tests.support import fault_checks
from tests.support import fault_table


@pytest.fixture(scope='module')
def results(tmp_path_factory):
  return fault_table.run_table('signals',
                               str(tmp_path_factory.mktemp('stops')))


(test_the_baseline_pushes_version_1, test_each_fault,
 test_the_rerun_without_a_fault_pushes_version_2) = fault_checks.table_tests(
     fault_table.SIGNAL_ROWS, timeout=2400)
