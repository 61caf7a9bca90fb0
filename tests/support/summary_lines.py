"""Checks of what a run's summary says, for the end-to-end tests."""

import re
from typing import Dict, List

_WORSE = re.compile(r'(\w+): (\S+) against (\S+)')


def metrics_line(out: str, role: str) -> Dict[str, str]:
  """{metric: value as printed} of the summary's `<role> metrics:` line."""
  line = next(l for l in out.splitlines()
              if l.startswith(f'{role} metrics: '))
  return dict(p.split('=') for p in line.split(': ', 1)[1].split(', '))


def blessed_verdict(out: str, directions: Dict[str, str]) -> List[str]:
  """The metrics a blessed run's `validation:` line says the model is worse
  in than the served one; each with the candidate's and the baseline's
  figures the summary prints below it, on the worse side in its direction.
  """
  line = next(l for l in out.splitlines() if l.startswith('validation: '))
  assert line.startswith('validation: BLESSED'), line
  if line == 'validation: BLESSED':
    return []
  assert line.startswith('validation: BLESSED, but worse than the served v')
  assert line.endswith('validator.regression_margin)'), line
  candidate = metrics_line(out, 'candidate')
  baseline = metrics_line(out, 'baseline')
  worse = []
  for metric, mine, theirs in _WORSE.findall(line.split(' in ', 1)[1]):
    assert f'{float(mine):.4g}' == candidate[metric], (line, candidate)
    assert f'{float(theirs):.4g}' == baseline[metric], (line, baseline)
    higher = directions[metric] == 'higher'
    assert (float(mine) < float(theirs)) if higher else (
        float(mine) > float(theirs)), line
    worse.append(metric)
  assert worse, line
  return worse
