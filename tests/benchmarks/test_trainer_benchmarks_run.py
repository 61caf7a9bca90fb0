"""The trainer's benchmark scripts, each run end to end at a tiny size
(tests/support/benchmark_runs.py): the time to quality on generated
interactions among them."""

import pytest

from tests.support import benchmark_runs

pytestmark = pytest.mark.slow

# benchmark: (tiny arguments, labels of rows the table must print, each
# followed by a number on its line)
CASES = {
    'trainer_fixed_cost': (
        ['--runs', '1', '--steps', '2'], ['checkpoint save', 'total']),
    'trainer_scale': (
        ['--sizes', '0.01', '--rounds', '1'], ['0.01M']),
    'time_to_quality': (
        ['--sizes', '1', '--sequences', '150', '--items', '200', '--epochs',
         '1', '--gensim-epochs', '1', '--queries', '20', '--rounds', '1'],
        ['baseline: gensim Word2Vec sg', 'pipeline trainer',
         'data steps (ExampleGen + Vocabulary']),
    'trainer_throughput': (
        ['--presets', 'defaults', '--rounds', '1', '--steps', '5',
         '--live-steps', '10', '--tokens', '20000'],
        ['fused SkipGramStep op', 'live new, stacks of 10',
         'gensim Word2Vec sg, 2 workers']),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_the_benchmark_prints_its_table_at_a_tiny_size(name, tmp_path):
  benchmark_runs.check_table(name, *CASES[name], cwd=str(tmp_path))
