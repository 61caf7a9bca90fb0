"""The report page's sections for people: neighbours, frequency buckets, map.

Renders `report['inspection']` (components/validator/inspection.py) as HTML:
one table of nearest neighbours, candidate and baseline side by side; one of
recall@k by frequency bucket; an inline SVG scatter of the top tokens.
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
  return '&ndash;' if x is None else f'{x:.4g}'


def buckets_table(rows: List[Dict[str, Any]]) -> str:
  roles = [r for r in ('candidate', 'baseline', 'popularity')
           if rows and r in rows[0]]
  heads = ''.join(f'<th>{r}</th>' for r in roles)
  body = ''.join(
      f'<tr><td>{html.escape(r["bucket"])}</td><td>{r["pairs"]}</td>'
      + ''.join(f'<td>{_fmt(r.get(role))}</td>' for role in roles) + '</tr>'
      for r in rows)
  return (f'<table class="buckets"><tr><th>target frequency</th><th>pairs</th>'
          f'{heads}</tr>{body}</table>')


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
  count = len(inspection['map'].get('tokens') or [])
  return (
      '<h2>Nearest neighbours</h2>\n'
      '<p>Tokens from the most frequent, middle and rarest third of the '
      'vocabulary; cosine similarity after each neighbour.</p>\n'
      + neighbours_table(inspection['neighbours'])
      + '\n<h2>Held-out recall@k by frequency</h2>\n'
      + buckets_table(inspection['by_frequency'])
      + f'\n<h2>Map of the {count} most frequent tokens (PCA)</h2>\n'
      + map_svg(inspection['map']))
