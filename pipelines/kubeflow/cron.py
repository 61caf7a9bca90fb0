"""Kubeflow Pipelines cron expressions: six fields, seconds first."""

import re

# Field name, lowest value, highest value, names allowed instead of numbers.
_CRON_FIELDS = (
    ('seconds', 0, 59, ()),
    ('minutes', 0, 59, ()),
    ('hours', 0, 23, ()),
    ('day of month', 1, 31, ()),
    ('month', 1, 12, ('JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG',
                      'SEP', 'OCT', 'NOV', 'DEC')),
    ('day of week', 0, 6, ('SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT')),
)
_CRON_DESCRIPTORS = ('@yearly', '@annually', '@monthly', '@weekly', '@daily',
                     '@midnight', '@hourly')



def validate_cron(cron: str) -> str:
  """Checks a Kubeflow Pipelines cron expression: 6 fields, seconds first."""
  text = ' '.join(cron.split())
  if text.startswith('@'):
    if text in _CRON_DESCRIPTORS or re.fullmatch(
        r'@every (\d+(\.\d+)?(ns|us|ms|s|m|h))+', text):
      return text
    raise ValueError(f'--cron {cron!r}: unknown descriptor; use 6 fields '
                     '(seconds first), @daily, @hourly, ... or @every 1h')
  fields = text.split(' ') if text else []
  if len(fields) == 5:
    raise ValueError(
        f'--cron {cron!r} has 5 fields; Kubeflow Pipelines cron has 6, '
        f'seconds first: {"0 " + text!r}')
  if len(fields) != 6:
    raise ValueError(
        f'--cron {cron!r} has {len(fields)} fields; Kubeflow Pipelines cron '
        'has 6, seconds first, e.g. "0 0 3 * * *" (03:00 daily)')
  for field, (name, low, high, names) in zip(fields, _CRON_FIELDS):
    _check_cron_field(cron, field, name, low, high, names)
  return text


def _check_cron_field(cron, field, name, low, high, names):
  def value(token):
    if token.upper() in names:
      return names.index(token.upper()) + low
    if not token.isdigit() or not low <= int(token) <= high:
      raise ValueError(f'--cron {cron!r}: {name} field {field!r} must be '
                       f'within {low}-{high}')
    return int(token)

  if field == '?' and name in ('day of month', 'day of week'):
    return
  for part in field.split(','):
    base, slash, step = part.partition('/')
    if slash and (not step.isdigit() or int(step) < 1):
      raise ValueError(f'--cron {cron!r}: {name} field {field!r} has a bad '
                       'step after "/"')
    if base == '*':
      continue
    start, dash, end = base.partition('-')
    if dash:
      if value(start) > value(end):
        raise ValueError(f'--cron {cron!r}: {name} range {base!r} is '
                         'reversed')
    else:
      value(start)
