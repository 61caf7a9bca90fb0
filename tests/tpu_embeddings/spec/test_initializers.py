"""Tests of tpu_embeddings/spec/initializers.py: the tables' random
initializers, and what creating a table with them costs."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.support import paths
from tpu_embeddings.spec import initializers
from tpu_embeddings.spec.embedding_spec import TableSpec


def test_uniform_values_follow_the_seed_and_differ_between_tables():
  tf.random.set_seed(5)
  first = initializers.Uniform(-0.25, 0.25)([400, 8]).numpy()
  second = initializers.Uniform(-0.25, 0.25)([400, 8]).numpy()
  tf.random.set_seed(5)
  again = initializers.Uniform(-0.25, 0.25)([400, 8]).numpy()
  assert first.dtype == np.float32 and first.shape == (400, 8)
  assert first.min() >= -0.25 and first.max() < 0.25
  assert abs(first.mean()) < 0.01 and first.std() == pytest.approx(
      0.5 / np.sqrt(12), rel=0.05)
  np.testing.assert_array_equal(first, again)
  assert not np.array_equal(first, second)


def test_truncated_normal_stays_within_two_stddevs():
  values = initializers.TruncatedNormal(0.3)([2000, 8]).numpy()
  assert np.abs(values).max() <= 0.6
  # A normal cut at two stddevs keeps 0.88 of its stddev.
  assert values.std() == pytest.approx(0.88 * 0.3, rel=0.05)


def test_the_spec_builds_them_at_its_scale():
  table = TableSpec(name='t', dim=16)
  values = table.build_initializer()([1000, 16]).numpy()
  assert np.abs(values).max() <= 0.5 / 16
  normal = TableSpec(name='t', dim=16, initializer='truncated_normal',
                     initializer_scale=0.1)
  assert np.abs(normal.build_initializer()([1000, 16]).numpy()).max() <= 0.2


_CREATE = r'''
import sys
import tensorflow as tf
from tpu_embeddings.spec.embedding_spec import TableSpec

def peak():
  with open('/proc/self/status') as f:
    return int(dict(l.split(':', 1) for l in f)['VmHWM'].split()[0]) * 1024

rows, dim = int(sys.argv[1]), 64
tf.Variable(tf.zeros([1024, dim]))  # the runtime up before measuring
before = peak()
table = tf.Variable(TableSpec(name='t', dim=dim,
                              initializer=sys.argv[2]).build_initializer()(
                                  [rows, dim]))
print((peak() - before) / (rows * dim * 4))
'''


@pytest.mark.slow
@pytest.mark.parametrize('kind', ['uniform', 'truncated_normal'])
def test_creating_a_table_costs_about_one_table(kind):
  env = dict(os.environ, PYTHONPATH=paths.REPO, TF_CPP_MIN_LOG_LEVEL='3')
  done = subprocess.run([sys.executable, '-c', _CREATE, '1000000', kind],
                        cwd=paths.REPO, env=env, capture_output=True,
                        text=True, check=True)
  assert float(done.stdout.split()[-1]) < 1.5
