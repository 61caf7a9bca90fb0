"""The validation report: `report.json` (everything) and `report.html` (people).

The HTML page is self-contained: gate table, a metric table whose rows are
the metrics the model declares (METRICS, then its other figures) and whose
columns the models and references scored (their labels), nearest
neighbours of every table, the module's own sections, a map of the top
tokens (`report_sections`) and an inline SVG histogram of one table's row
norms, candidate vs baseline (no plotting library). Pushed versions passed
over as baseline because they cannot be read are listed on it and by
`unreadable_baseline_note`.
"""

import html
import json
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from components.validator import report_sections

REPORT_JSON = 'report.json'
REPORT_HTML = 'report.html'

_W, _H, _PAD = 640, 260, 40
_COLORS = {'candidate': '#1f77b4', 'baseline': '#ff7f0e'}


def norm_histogram(series: Dict[str, Optional[np.ndarray]], bins: int = 30
                   ) -> Dict[str, Any]:
  """Shared-bin histograms of finite row norms: {'edges', 'counts': {name}}."""
  finite = {k: v[np.isfinite(v)] for k, v in series.items()
            if v is not None and v.size}
  values = [v for v in finite.values() if v.size]
  if not values:
    return {'edges': [], 'counts': {}}
  lo = min(float(v.min()) for v in values)
  hi = max(float(v.max()) for v in values)
  if hi <= lo:
    hi = lo + 1.0
  edges = np.linspace(lo, hi, bins + 1)
  return {
      'edges': [float(e) for e in edges],
      'counts': {k: [int(c) for c in np.histogram(v, bins=edges)[0]]
                 for k, v in finite.items()},
  }


def histogram_svg(hist: Dict[str, Any], title: str) -> str:
  """Overlaid step-free bar histogram as an inline SVG element."""
  edges, counts = hist['edges'], hist['counts']
  if not edges or not counts:
    return '<p>(no finite rows to plot)</p>'
  n = len(edges) - 1
  peak = max(max(c) for c in counts.values()) or 1
  plot_w, plot_h = _W - 2 * _PAD, _H - 2 * _PAD
  bar_w = plot_w / n
  parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" '
           f'height="{_H}" role="img" aria-label="{html.escape(title)}">',
           f'<text x="{_W / 2}" y="16" text-anchor="middle" '
           f'font-size="13">{html.escape(title)}</text>',
           f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" '
           f'y2="{_H - _PAD}" stroke="#333"/>',
           f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" '
           'stroke="#333"/>']
  for name, cs in counts.items():
    color = _COLORS.get(name, '#555')
    for i, c in enumerate(cs):
      if not c:
        continue
      h = plot_h * c / peak
      parts.append(
          f'<rect class="bar-{html.escape(name)}" x="{_PAD + i * bar_w:.1f}" '
          f'y="{_H - _PAD - h:.1f}" width="{max(bar_w - 1, 1):.1f}" '
          f'height="{h:.1f}" fill="{color}" fill-opacity="0.5">'
          f'<title>{html.escape(name)}: {c} rows with norm in '
          f'[{edges[i]:.4g}, {edges[i + 1]:.4g})</title></rect>')
  parts.append(f'<text x="{_PAD}" y="{_H - _PAD + 16}" font-size="11">'
               f'{edges[0]:.4g}</text>')
  parts.append(f'<text x="{_W - _PAD}" y="{_H - _PAD + 16}" font-size="11" '
               f'text-anchor="end">{edges[-1]:.4g}</text>')
  parts.append(f'<text x="{_W / 2}" y="{_H - 8}" font-size="11" '
               'text-anchor="middle">row L2 norm</text>')
  parts.append(f'<text x="{_PAD - 4}" y="{_PAD}" font-size="11" '
               f'text-anchor="end">{peak}</text>')
  for j, name in enumerate(counts):
    y = _PAD + 14 * j
    parts.append(f'<rect x="{_W - _PAD - 110}" y="{y - 9}" width="10" '
                 f'height="10" fill="{_COLORS.get(name, "#555")}" '
                 'fill-opacity="0.5"/>')
    parts.append(f'<text x="{_W - _PAD - 95}" y="{y}" font-size="11">'
                 f'{html.escape(name)}</text>')
  parts.append('</svg>')
  return '\n'.join(parts)


def _cell(x: Any) -> str:
  if isinstance(x, float):
    return f'{x:.6g}' if math.isfinite(x) else str(x)
  if x is None:
    return '&ndash;'
  return html.escape(str(x))


def metric_columns(report: Dict[str, Any]) -> List[Tuple[str, str]]:
  """(key in report['metrics'], title) of the models and references scored.
  """
  found = report.get('metrics', {})
  columns = [(role, role) for role in ('candidate', 'baseline')
             if role == 'candidate' or found.get(role) is not None]
  return columns + list((report.get('references') or {}).items())


def _metric_rows(report: Dict[str, Any]) -> List[str]:
  found = report.get('metrics', {})
  columns = [found.get(key) or {} for key, _ in metric_columns(report)]
  declared = list(report.get('parameters', {}).get('metrics') or {})
  others = sorted(set().union(*columns) - set(declared))
  rows = []
  for key in declared + others:
    cells = [c.get(key) for c in columns]
    if all(x is None or isinstance(x, dict) for x in cells):
      continue
    rows.append(f'<tr><td>{html.escape(key)}</td>'
                + ''.join(f'<td>{_cell(x)}</td>' for x in cells) + '</tr>')
  return rows


def unreadable_baseline_note(report: Dict[str, Any]) -> str:
  """One line on pushed versions that could not be the baseline; '' if none."""
  unreadable = report.get('baseline_unreadable') or []
  if not unreadable:
    return ''
  what = '; '.join(f'version {u["version"]}: {u["error"]}' for u in unreadable)
  version = report.get('baseline_version')
  against = (f'compared against version {version}, the newest readable one'
             if version is not None else
             'no readable pushed version, so absolute thresholds only')
  return f'pushed baseline cannot be read ({what}); {against}'


def render_html(report: Dict[str, Any], hist: Dict[str, Any],
                norms_table: str = '') -> str:
  blessed = report['blessed']
  verdict = 'BLESSED' if blessed else 'NOT BLESSED'
  color = '#2a7d2a' if blessed else '#b22222'
  gates = ''.join(
      f'<tr class="{"pass" if g["passed"] else "fail"}"><td>'
      f'{html.escape(g["name"])}</td><td>{"pass" if g["passed"] else "FAIL"}'
      f'</td><td>{html.escape(g["reason"])}</td></tr>'
      for g in report['gates'])
  baseline = report.get('baseline_model') or '(none: absolute thresholds only)'
  warnings = ''.join(f'<li>{html.escape(w)}</li>'
                     for w in report.get('warnings', []))
  if warnings:
    warnings = f'<h2>Warnings</h2><ul>{warnings}</ul>'
  headers = ''.join(f'<th>{html.escape(title)}</th>'
                    for _, title in metric_columns(report))
  norms = (f'<h2>Row norms of table <code>{html.escape(norms_table)}</code>'
           '</h2>\n'
           + histogram_svg(hist, f'Row norms of table {norms_table!r}: '
                           'candidate vs baseline')) if norms_table else ''
  note = unreadable_baseline_note(report)
  note = (f'<p class="unreadable-baseline" style="color: #b22222">'
          f'{html.escape(note)}</p>' if note else '')
  return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8">\
<title>Checkpoint validation: {verdict}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}
tr.fail td {{ background: #fde8e8; }}
</style></head><body>
<h1 style="color: {color}">{verdict}</h1>
<p>{html.escape(report['summary'])}</p>
<p>Candidate: <code>{html.escape(report['current_model'])}</code><br>
Baseline: <code>{html.escape(baseline)}</code></p>
{warnings}
{note}
<h2>Gates</h2>
<table><tr><th>gate</th><th>result</th><th>reason</th></tr>{gates}</table>
<h2>Metrics</h2>
<table><tr><th>metric</th>{headers}</tr>
{''.join(_metric_rows(report))}</table>
{report_sections.render(report.get('inspection'))}
{norms}
</body></html>
"""


def write(directory: str, report: Dict[str, Any],
          candidate_norms: Optional[np.ndarray] = None,
          baseline_norms: Optional[np.ndarray] = None,
          norms_table: str = '') -> Sequence[str]:
  """Writes report.json and report.html into `directory`; returns their
  paths. The norms are those of table `norms_table`'s rows."""
  import tensorflow as tf
  hist = norm_histogram({'candidate': candidate_norms,
                         'baseline': baseline_norms})
  table = norms_table
  report = dict(report, norm_histogram=dict(hist, table=table))
  tf.io.gfile.makedirs(directory)
  paths = []
  for name, text in ((REPORT_JSON, json.dumps(report, indent=2, sort_keys=True,
                                               allow_nan=False) + '\n'),
                     (REPORT_HTML, render_html(report, hist, table))):
    path = f'{directory.rstrip("/")}/{name}'
    with tf.io.gfile.GFile(path, 'w') as f:
      f.write(text)
    paths.append(path)
  return paths
