"""Benchmark scripts of the data steps, exports, lookups and start-up
imports, each run end to end at a tiny size (tests/support/
benchmark_runs.py). The trainer's benchmarks and the whole-pipeline quality
benchmarks are in files of their own beside this one, so the suite's two
workers can take them side by side; table_scale has a smoke test of its
own, and export_large_table runs as a part of targets' (tests/benchmarks/
test_targets.py).
"""

import pytest

from tests.support import benchmark_runs

pytestmark = pytest.mark.slow

# benchmark: (tiny arguments, labels of rows the table must print, each
# followed by a number on its line)
CASES = {
    'contract_check_time': (
        ['--rounds', '1'], ['built-in skip-gram', 'module file']),
    'data_steps': (
        ['--sizes', '0.05', '--vocab', '500'],
        ['floor: Counter pass', 'ExampleGen', 'Vocabulary',
         'ExampleGen+Vocabulary']),
    'validator_restore_memory': (
        ['--rows', '1000', '--dim', '8'], ['with_slots', 'validator']),
    'start_up_imports': (
        ['--rounds', '1', '--modules', 'tpu_embeddings.core.text'],
        ['collector on', 'collector paused', 'paused / on']),
    'lookup_throughput': (
        ['--rows', '1000', '--dim', '8', '--calls-per-round', '5',
         '--rounds', '1', '--tokens-per-call', '16'],
        ['(user) dict + np.take', 'SavedModel lookup, tf.saved_model.load']),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_the_benchmark_prints_its_table_at_a_tiny_size(name, tmp_path):
  benchmark_runs.check_table(name, *CASES[name], cwd=str(tmp_path))
