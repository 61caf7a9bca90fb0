"""What a blessing says of a candidate worse than its baseline, within the
margin.

`validator.regression_margin` lets a candidate lose a little against the
pushed baseline and still be blessed: a retrained model may be worse on the
same eval data than the version it replaces. The verdict says so, on every
metric of every model alike (a skip-gram's held-out loss as a module's RMSE
or recall, each in the direction its METRICS give), with both figures:

    worse than the served v1 in rmse: 1.117 against 1.083 (within the margin
    0.05, validator.regression_margin)
"""

from typing import Any, List, Mapping, Sequence, Tuple

from tpu_embeddings.validation import gates as gates_lib


def worse_than_baseline(gates: Sequence[gates_lib.Gate]
                        ) -> List[gates_lib.Gate]:
  """The baseline gates passed by a candidate worse than the baseline:
  within the margin, but worse."""
  return [g for g in gates if g.name.startswith('baseline/') and g.passed
          and g.worse_than_reference()]


def figures(a: float, b: float) -> Tuple[str, str]:
  """`a` and `b` to four significant digits, or as many more as it takes
  to tell them apart."""
  for digits in range(4, 18):
    shown = f'{a:.{digits}g}', f'{b:.{digits}g}'
    if shown[0] != shown[1]:
      return shown
  return repr(a), repr(b)


def worse_note(worse: Sequence[gates_lib.Gate], baseline: str,
               margin: float) -> str:
  """The note on `worse` (`worse_than_baseline`'s gates) against `baseline`
  (e.g. 'the served v1'); '' when none."""
  if not worse:
    return ''
  found = []
  for g in worse:
    value, reference = figures(g.value, g.reference)
    found.append(f'{g.name.split("/", 1)[1]}: {value} against {reference}')
  return (f'worse than {baseline} in {" and ".join(found)} (within the '
          f'margin {margin:g}, validator.regression_margin)')


def note(report: Mapping[str, Any], gates: Sequence[gates_lib.Gate]) -> str:
  """The note of a blessed report on the metrics its candidate is worse in
  than the baseline ('' when none, or when not blessed)."""
  if not gates_lib.blessed(list(gates)):
    return ''
  version = report.get('baseline_version')
  baseline = (f'v{version}, the newest readable pushed version,'
              if report.get('baseline_unreadable') else
              f'the served v{version}')
  margin = report['parameters']['thresholds']['regression_margin']
  return worse_note(worse_than_baseline(gates), baseline, margin)
