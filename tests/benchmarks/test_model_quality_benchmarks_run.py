"""The quality benchmarks of the example modules, each running the whole
pipeline end to end at a tiny size (tests/support/benchmark_runs.py)."""

import pytest

from tests.support import benchmark_runs

pytestmark = pytest.mark.slow

# benchmark: (tiny arguments, labels of rows the table must print, each
# followed by a number on its line)
CASES = {
    'own_model_quality': (
        ['--items', '200', '--sequences', '150', '--item2vec-windows', '5'],
        ['two-tower (module)', 'item2vec (skip-gram)', 'popularity']),
    'rating_quality': (
        ['--users', '60', '--items', '40', '--count', '2000'],
        ['global mean', 'user + item biases', 'plain Keras, same model',
         'rating example (pipeline)']),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_the_benchmark_prints_its_table_at_a_tiny_size(name, tmp_path):
  benchmark_runs.check_table(name, *CASES[name], cwd=str(tmp_path))
