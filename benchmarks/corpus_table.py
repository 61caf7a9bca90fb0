"""How `real_corpora` prints a corpus: a row per side, a column per figure."""

# Figures that are shares of items (binomial standard errors); every other
# figure is a similarity set's Spearman correlation.
SHARES = ('analogy', 'HR@10', 'catP@10')


def fmt(x, spec='.3f'):
  return '-' if x is None else format(x, spec)


def figure_names(rows):
  """The figures any side has, in the order they were added."""
  names = []
  for row in rows.values():
    names.extend(k for k in row.get('figures', {}) if k not in names)
  return names


def print_corpus(name, tokens, rows, judged_on):
  """Prints one corpus: a row per side (`rows`: {side: {'blessed', 'loss',
  'frequency', 'train', 'whole', 'figures': {name: value}}}), the time
  ratios, and `judged_on` (what the figures were judged on)."""
  names = figure_names(rows)
  print(f'\n== {name}: {tokens:,} tokens', flush=True)
  print(f'{"side":<10} {"blessed":>7} {"heldout":>8} {"freq":>7} ' +
        ''.join(f'{n[:8]:>9}' for n in names) +
        f' {"train s":>8} {"whole s":>8}')
  for side, row in rows.items():
    figures = row.get('figures', {})
    print(f'{side:<10} {row["blessed"]:>7} {fmt(row["loss"]):>8} '
          f'{fmt(row["frequency"]):>7} ' +
          ''.join(f'{fmt(figures.get(n)):>9}' for n in names) +
          f' {row["train"]:>8.1f} {row["whole"]:>8.1f}')
  ours, theirs = rows['pipeline'], rows['gensim']
  print(f'ratios pipeline / gensim: train {ours["train"] / theirs["train"]:.2f}'
        f', whole {ours["whole"] / theirs["whole"]:.2f}; ' + judged_on,
        flush=True)
