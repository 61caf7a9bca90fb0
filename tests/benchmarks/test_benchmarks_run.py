"""Every benchmark script runs end to end at a tiny size and prints its table.

A renamed component, module or node breaks one of these tests instead of a
user's measurement. The sizes are far too small for the figures to mean
anything: each test checks that the script finished and printed the rows
its reader looks for, with numbers in them, never the numbers themselves.
(table_scale, time_to_quality and the quality benchmarks have smoke tests
of their own beside this file.)
"""

import os
import re
import subprocess
import sys

import pytest

from tests.support import paths

pytestmark = pytest.mark.slow

NUMBER = r'[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?'

# benchmark: (tiny arguments, labels of rows the table must print, each
# followed by a number on its line)
CASES = {
    'contract_check_time': (
        ['--rounds', '1'], ['built-in skip-gram', 'module file']),
    'data_steps': (
        ['--sizes', '0.05', '--vocab', '500'],
        ['floor: Counter pass', 'ExampleGen', 'Vocabulary',
         'ExampleGen+Vocabulary']),
    'export_large_table': (
        ['--rows', '2000', '--dim', '8', '--rounds', '1'],
        ['(a) TF2 tf.saved_model.save', '(b) TF Hub recipe',
         'ours, both + load checks']),
    'validator_restore_memory': (
        ['--rows', '1000', '--dim', '8'], ['with_slots', 'validator']),
    'lookup_throughput': (
        ['--rows', '1000', '--dim', '8', '--calls-per-round', '5',
         '--rounds', '1', '--tokens-per-call', '16'],
        ['(user) dict + np.take', 'SavedModel lookup, tf.saved_model.load']),
    'trainer_fixed_cost': (
        ['--runs', '1', '--steps', '2'], ['checkpoint save', 'total']),
    'trainer_scale': (
        ['--sizes', '0.01', '--rounds', '1'], ['0.01M']),
    'trainer_throughput': (
        ['--presets', 'defaults', '--rounds', '1', '--steps', '5',
         '--live-steps', '10', '--tokens', '20000'],
        ['fused SkipGramStep op', 'gensim Word2Vec sg, 2 workers']),
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
  args, rows = CASES[name]
  env = dict(os.environ, PYTHONPATH=paths.REPO)
  done = subprocess.run(
      [sys.executable, '-m', f'benchmarks.{name}', *args],
      cwd=str(tmp_path), env=env, capture_output=True, text=True,
      timeout=900, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  for label in rows:
    pattern = rf'{re.escape(label)}[^\n]*\s{NUMBER}'
    assert re.search(pattern, done.stdout), (
        f'{name}: no row {label!r} with a number in\n{done.stdout[-3000:]}')
