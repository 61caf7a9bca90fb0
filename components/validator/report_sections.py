"""The report page's sections for people: neighbours, the model's own, a map.

Renders `report['inspection']`: per table, one table of nearest neighbours,
candidate and baseline side by side; each section the model's details_fn
gives (e.g. skip-gram's recall@k by frequency), with its title and columns;
an inline SVG scatter of the first table's top tokens.
"""

import html
from typing import Any, Dict, List

_W, _H, _PAD = 720, 520, 30


def _neighbour_cell(found: List[List[Any]]) -> str:
  if not found:
    return '<td>(unknown)</td>'
  return '<td>' + ', '.join(f'{html.escape(str(t))} <small>{s:.2f}</small>'
                            for t, s in found) + '</td>'


def neighbours_table(section: Dict[str, Any]) -> str:
  rows, roles = [], []
  for bucket, queries in section.items():
    for q in queries:
      roles = [r for r in ('candidate', 'baseline') if r in q]
      cells = ''.join(_neighbour_cell(q[r]) for r in roles)
      rows.append(f'<tr><td>{html.escape(bucket)}</td><td><b>'
                  f'{html.escape(q["token"])}</b></td>{cells}</tr>')
  if not rows:
    return '<p>(no known tokens to query)</p>'
  heads = ''.join(f'<th>{r}</th>' for r in roles)
  return (f'<table class="neighbours"><tr><th>frequency</th><th>token</th>'
          f'{heads}</tr>{"".join(rows)}</table>')


def _fmt(x) -> str:
  if x is None:
    return '&ndash;'
  if isinstance(x, float):
    return f'{x:.4g}'
  return html.escape(str(x))


def section_table(section: Dict[str, Any]) -> str:
  """One section of a model's details: title, note, a table of rows."""
  heads = ''.join(f'<th>{html.escape(str(c))}</th>'
                  for c in section.get('columns') or [])
  body = ''.join('<tr>' + ''.join(f'<td>{_fmt(x)}</td>' for x in row)
                 + '</tr>' for row in section.get('rows') or [])
  note = section.get('note')
  return (f'<h2>{html.escape(section.get("title") or "")}</h2>\n'
          + (f'<p>{html.escape(note)}</p>\n' if note else '')
          + f'<table class="section"><tr>{heads}</tr>{body}</table>')


def map_svg(section: Dict[str, Any]) -> str:
  tokens, xy = section.get('tokens') or [], section.get('xy') or []
  if not tokens:
    return '<p>(too few known tokens to map)</p>'
  xs, ys = [p[0] for p in xy], [p[1] for p in xy]
  def scale(v, lo, hi, size):
    return _PAD + (v - lo) / ((hi - lo) or 1.0) * (size - 2 * _PAD)
  parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" '
           f'height="{_H}" role="img" aria-label="PCA map of the top tokens">']
  for token, (x, y) in zip(tokens, xy):
    px = scale(x, min(xs), max(xs), _W)
    py = _H - scale(y, min(ys), max(ys), _H)
    parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2" fill="#1f77b4"/>'
                 f'<text class="map-token" x="{px + 3:.1f}" y="{py - 2:.1f}" '
                 f'font-size="9">{html.escape(token)}</text>')
  parts.append('</svg>')
  return '\n'.join(parts)


def render(inspection: Dict[str, Any]) -> str:
  """The sections' HTML; '' when the report has none (a failed restore)."""
  if not inspection:
    return ''
  parts = []
  for table, section in (inspection.get('neighbours') or {}).items():
    parts.append(f'<h2>Nearest neighbours in table <code>{html.escape(table)}'
                 '</code></h2>\n<p>Tokens from the most frequent, middle '
                 'and rarest third of the vocabulary; cosine similarity '
                 'after each neighbour.</p>\n' + neighbours_table(section))
  parts += [section_table(s) for s in inspection.get('sections') or []]
  found = inspection.get('map')
  if found:
    count = len(found.get('tokens') or [])
    parts.append(f'<h2>Map of the {count} most frequent tokens of table '
                 f'<code>{html.escape(found.get("table", ""))}</code> (PCA)'
                 '</h2>\n'
                 + map_svg(found))
  return '\n'.join(parts)
