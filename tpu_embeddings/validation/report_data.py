"""The validation report's data: inputs, parameters, metrics, gates.

    current_model, module_file, baseline_model, baseline_version,
    baseline_unreadable       what was compared (newer pushed versions
                              passed over: they cannot be read)
    parameters                the validator's settings, the model's METRICS
                              (`metrics`) and what its details_fn adds
    eval_data                 the Examples scored, and what details_fn adds
    metrics                   {'candidate', 'baseline', <reference>: {metric:
                              value}}; `references`: {reference: its label}
    health, restore           every table's health; what the restore read
    not_comparable            {metric: why the baseline's cannot be compared}
    inspection                neighbours by table, a map, details' sections
    gates, blessed, summary, warnings
    worse_than_baseline       of a blessed candidate worse than the baseline
                              (within the margin): which metrics, both
                              figures ('' when none); the summary ends so
"""

import dataclasses
from typing import Any, Dict, List, Mapping

from tpu_embeddings.models.served import BASELINE
from tpu_embeddings.models.served import CANDIDATE
from tpu_embeddings.models.served import UNTRAINED
from tpu_embeddings.validation import baseline_note
from tpu_embeddings.validation import gates as gates_lib
from tpu_embeddings.validation.config import ValidatorConfig


def new_report(model_uri: str, examples_uri: str, config: ValidatorConfig,
               push_root: str, module, found, unreadable) -> Dict[str, Any]:
  """The report before any check."""
  return {
      'current_model': model_uri,
      'module_file': module.path if module.sha256 else '',
      'baseline_model': found.path if found else '',
      'baseline_version': found.version if found else None,
      'baseline_unreadable': [u.to_dict() for u in unreadable],
      'parameters': {
          **{f.name: getattr(config, f.name)
             for f in dataclasses.fields(ValidatorConfig)
             if f.name not in {t.name for t in dataclasses.fields(
                 gates_lib.Thresholds)}},
          'metrics': module.metrics, 'push_root': push_root,
          'thresholds': dataclasses.asdict(config.thresholds())},
      'eval_data': {'examples': examples_uri, 'split': 'eval'},
      'metrics': {CANDIDATE: None, BASELINE: None},
      'references': {},
      'health': {CANDIDATE: {}},
      'warnings': [],
  }


def add_references(report: Dict[str, Any],
                   references: Mapping[str, Mapping[str, Any]]):
  """Each reference's metrics and label into the report."""
  for name, found in references.items():
    report['metrics'][name] = dict(found.get('metrics') or {})
    report['references'][name] = found.get('label') or name


def add_details(report: Dict[str, Any], details: Mapping[str, Any]):
  """What a module's details_fn gives, into the report."""
  report['parameters'].update(details.get('parameters') or {})
  report['eval_data'].update(details.get('eval_data') or {})
  report['warnings'] += list(details.get('warnings') or [])
  report.setdefault('inspection', {})['sections'] = list(
      details.get('sections') or [])


def untrained_warnings(report: Dict[str, Any],
                       directions: Mapping[str, str],
                       floors: Mapping[str, List[str]]) -> List[str]:
  """A metric no better than an untrained model's that no floor against it
  gates: what the gates do not refuse but a reader should know."""
  out = []
  candidate = report['metrics'][CANDIDATE] or {}
  untrained = report['metrics'].get(UNTRAINED) or {}
  label = report['references'].get(UNTRAINED, 'untrained model')
  for metric, direction in directions.items():
    value, floor = candidate.get(metric), untrained.get(metric)
    if value is None or floor is None or UNTRAINED in floors.get(metric, ()):
      continue
    better = value > floor if direction == 'higher' else value < floor
    if not better:
      side = 'above' if direction == 'higher' else 'below'
      out.append(f'held-out {metric} {value:.5g} is not {side} an {label}\'s '
                 f'{floor:.5g}')
  return out


def finish(report: Dict[str, Any], gates: List[gates_lib.Gate]
           ) -> Dict[str, Any]:
  report['gates'] = [g.to_dict() for g in gates]
  report['blessed'] = gates_lib.blessed(gates)
  report['worse_than_baseline'] = baseline_note.note(report, gates)
  report['summary'] = gates_lib.summary(gates, report['worse_than_baseline'])
  return report
