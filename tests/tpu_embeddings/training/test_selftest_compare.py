"""The self-test's comparison: one tolerance, every way two values differ."""

import numpy as np

from tpu_embeddings.training.selftest import compare


def test_tolerance_is_relative_to_the_references_largest_value():
  reference = np.array([[2.0, -4.0], [1.0, 0.0]])
  # 1e-4 * 4 + 1e-9: just inside and just outside.
  inside = reference + np.array([[0.0, 3.9e-4], [0.0, 0.0]])
  outside = reference + np.array([[0.0, 0.0], [0.0, 4.1e-4]])
  ok = compare.difference('t/parameters', inside, reference)
  bad = compare.difference('t/parameters', outside, reference)
  assert ok.agrees and ok.scale == 4.0
  assert not bad.agrees
  np.testing.assert_allclose(bad.max_abs, 4.1e-4, rtol=1e-9)


def test_a_zero_variable_must_stay_zero_within_the_absolute_floor():
  zeros = np.zeros([3, 2])
  assert compare.difference('t/slot', zeros + 1e-10, zeros).agrees
  assert not compare.difference('t/slot', zeros + 1e-6, zeros).agrees


def test_shape_nan_and_missing_steps_are_differences_with_a_reason():
  shape = compare.difference('t', np.zeros([2, 3]), np.zeros([3, 2]))
  nan = compare.difference('t', np.array([np.nan, 1.0]), np.array([0.0, 1.0]))
  assert not shape.agrees and 'shape [2, 3] vs [3, 2]' in shape.note
  assert not nan.agrees and 'NaN' in nan.note
  # The same NaN on both sides is agreement (both trainers diverged alike).
  assert compare.difference('t', np.array([np.nan]),
                            np.array([np.nan])).agrees
  [steps] = compare.step_losses([1.0, 2.0], [1.0, 2.0, 3.0])
  assert not steps.agrees and '2 steps vs 3' in steps.note


def test_verdict_names_the_earliest_and_the_worst_difference():
  variables = [compare.difference('a/parameters', np.ones(2), np.ones(2), 0),
               compare.difference('b/parameters', np.array([1.01]),
                                  np.array([1.0]), 3),
               compare.difference('b/accumulators', np.array([2.0]),
                                  np.array([1.0]), 1)]
  losses = compare.step_losses([4.0, 3.0, 2.5], [4.0, 3.0, 2.0])
  verdict = compare.Verdict(variables, losses)
  assert not verdict.agrees
  first = verdict.first_differing()
  assert (first.name, first.step) == ('b/accumulators', 1)
  assert verdict.worst().name == 'b/accumulators'
  assert [(d.name, d.step, d.agrees) for d in losses] == [
      ('loss', 0, True), ('loss', 1, True), ('loss', 2, False)]
  lines = compare.table(verdict, [4.0, 3.0, 2.5], [4.0, 3.0, 2.0])
  assert sum('DIFFERS' in line for line in lines) == 3
  agreeing = compare.Verdict(variables[:1], losses[:2])
  assert agreeing.agrees and agreeing.first_differing() is None


def test_a_variable_on_one_side_only_is_a_difference():
  found = compare.variables({'t/parameters': np.ones(2), 'model/w': 1.0},
                            {'t/parameters': np.ones(2), 't/slot': 0.0}, 4)
  assert [(d.name, d.agrees, d.note, d.step) for d in found] == [
      ('t/parameters', True, '', 4), ('t/slot', False, 'missing from A', 4),
      ('model/w', False, 'missing from B', 4)]
