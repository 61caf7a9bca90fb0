"""The pipeline with no settings on real corpora, next to gensim's defaults.

    python -m benchmarks.real_corpora [--corpora lee,head500,enwiki,items]
        [--text NAME=PATH] [--similarity DIR] [--seeds 3]
        [--epochs 1,2,3] [--set table.optimizer=sgd ...]

For each corpus the whole local pipeline runs once in a fresh home with
`PipelineConfig()` as it comes (no `--set`), and gensim `Word2Vec(sg=1)` with
its own defaults (dim 100, window 5, min_count 5, 5 epochs, 3 workers) learns
from the same text: the pipeline's train split, read back from its Examples.
gensim trains `gensim_side.RUNS` (3) times with seeds 0, 1, 2: its figures
and training time are the medians (its threads race, so one run's figures
move), its held-out loss the first run's.
Text corpora (`benchmarks.text_corpora`, shipped with gensim, or a tokenized
file given with `--text NAME=PATH`) are judged by the Spearman correlation
on WordSim-353 and on each similarity set of `--similarity DIR` (SimLex-999,
MEN, ...), and by questions-words analogy accuracy, all on the words every
model knows (the same pairs, questions and candidate words for all); the
pipeline runs `--seeds` times (trainer.seed 0, 1, ...) and its figures and
times are the medians; the generated interaction corpus (`items`,
`benchmarks.interaction_corpus`) by next-item HR@10 (on the items neither
learned from: `time_to_quality.next_items`) and category P@10.

Per corpus it prints: blessed (the pipeline's own verdict with its default
gates; gensim's vectors are put through the same held-out loss test, on the
validator's pairs), the held-out loss of each and of the frequency-only model
the gate compares with, the quality figures, trainer / gensim training
seconds and whole-run seconds (the pipeline's wall from start to push vs
gensim's read + train).

With `--epochs`, the pipeline runs again per corpus at each number of
passes, and the table that follows gives each run's trainer seconds against
gensim's 5-epoch training and its figures against gensim's, with gensim's
own training seconds and figures after as many epochs beneath when that is
not its 5 (medians of its 3 seeded runs; on the same words), then the
fewest passes within `--tolerance` of gensim's 5-epoch figures on every
figure (time to quality).
Each figure's ± is the sampling standard error of gensim's on the items
judged (binomial, an upper bound for category P@10; Spearman's by Fisher's
z): gaps of about twice it or less are within what another sample of as
many items would move.
`--set` changes a setting for every pipeline run.
"""

import argparse
import io
import os
import tempfile

import numpy as np

from benchmarks import corpus_table
from benchmarks import embedding_quality as quality
from benchmarks import gensim_side
from benchmarks import interaction_corpus
from benchmarks import kernels_ready
from benchmarks import run_arguments
from benchmarks import text_corpora
from benchmarks import time_to_quality
from pipelines.cli import arguments

TEXT = ('lee', 'head500', 'enwiki')


def run_pipeline(data_root, home, settings=None):
  """The local pipeline with every default but `settings` ({name: value}, as
  `--set` names them); (summary, its tokens table)."""
  import tensorflow as tf

  from pipelines import config as config_lib
  from pipelines.local import runner
  from tpu_embeddings.artifacts import model_layout
  from tpu_embeddings.artifacts import vocabulary_file
  summary = runner.run(data_root, home,
                       config_lib.PipelineConfig.from_dict(settings or {}),
                       out=io.StringIO())
  reader = tf.train.load_checkpoint(
      model_layout.latest_checkpoint(summary['model']))
  tokens = vocabulary_file.read(summary['model']).tokens
  return summary, quality.Table(tokens, reader.get_tensor(
      model_layout.table_key('tokens')))


def _sides(home, runs, train_file):
  """The two rows of a corpus (the pipeline's: the medians of `runs`,
  [(summary, table)], one per seed), and gensim's models."""
  read, train, models = gensim_side.run(train_file)
  loss, frequency = gensim_side.heldout_loss(home, models[0])
  summaries = [summary for summary, _ in runs]
  blessed = sum(bool(s.get('blessed')) for s in summaries)

  def median_of(read_one):
    return gensim_side.median(read_one(s) for s in summaries)

  def metric(side, key):
    return median_of(lambda s: ((s.get('metrics') or {}).get(side) or {})
                     .get(key, float('nan')))

  rows = {
      'pipeline': {
          'blessed': ('yes' if blessed == len(runs) else
                      f'{blessed}/{len(runs)}' if blessed else 'NO'),
          'loss': metric('candidate', 'eval_loss'),
          'frequency': metric('frequency', 'eval_loss'),
          'train': median_of(lambda s: s['timing']['per_component'].get(
              time_to_quality.TRAINER_NODE, float('nan'))),
          'whole': median_of(lambda s: s['timing']['wall_seconds'])},
      'gensim': {
          'blessed': 'yes' if loss is not None and loss < frequency else 'NO',
          'loss': loss, 'frequency': frequency, 'train': train,
          'whole': read + train},
  }
  return rows, [quality.Table(m.wv.index_to_key, m.wv.vectors)
                for m in models]


def _error(name, value, n):
  """Figure `name`'s standard error at `value`, judged on `n` items."""
  return quality.standard_error(value, n, name not in corpus_table.SHARES)


def passes_to_quality(name, data_root, work, args, gensim_train, score,
                      train_file):
  """Runs the pipeline again at each of `args.epochs`; prints each run's
  trainer seconds and figures against gensim's (`score(table)` gives
  {figure: (ours, gensim's 5-epoch median, items judged)}), gensim's own
  figures after as many epochs (medians of its seeded runs), and the
  fewest passes within `args.tolerance` of gensim's on every figure."""
  if not args.epochs:
    return
  print(f'{"passes":>6} {"trainer s":>9} {"x gensim":>8} {"blessed":>7}  '
        f'figures (pipeline / gensim ±its standard error)')
  reached = None
  for epochs in args.epochs:
    summary, table = run_pipeline(
        data_root, os.path.join(work, f'home-{name}-{epochs}-passes'),
        {**args.settings, 'trainer.epochs': epochs})
    trainer = summary['timing']['per_component'].get(
        time_to_quality.TRAINER_NODE, float('nan'))
    figures = score(table)
    good = all(time_to_quality.reaches(ours, theirs, args.tolerance)
               for ours, theirs, _ in figures.values())
    if good and reached is None:
      reached = (epochs, trainer)
    print(f'{epochs:>6} {trainer:>9.1f} {trainer / gensim_train:>8.2f} '
          f'{"yes" if summary.get("blessed") else "NO":>7}  ' + ', '.join(
              f'{k} {o:.3f} / {t:.3f} '
              f'±{_error(k, t, n):.3f}'
              for k, (o, t, n) in figures.items()))
    if epochs == gensim_side.EPOCHS:  # its figures are the comparison's
      continue
    _, seconds, models = gensim_side.run(train_file, epochs=epochs)
    theirs = [score(quality.Table(m.wv.index_to_key, m.wv.vectors))
              for m in models]
    print(f'{"":>6} {seconds:>9.1f} {"":>8} {"":>7}  gensim after '
          f'{epochs} epoch{"s" * (epochs != 1)}: ' + ', '.join(
              f'{k} {gensim_side.median(t[k][0] for t in theirs):.3f}'
              for k in figures), flush=True)
  print(f'to gensim quality (-{args.tolerance:.0%}): ' + (
      f'{reached[0]} passes, trainer {reached[1]:.1f}s = '
      f'{reached[1] / gensim_train:.2f}x gensim training '
      f'({gensim_train:.1f}s)' if reached else
      f'not reached with passes {args.epochs}'), flush=True)


def run_text(name, work, args):
  """One text corpus: the pipeline once per seed, gensim's seeded runs,
  their figures on every similarity set and the analogies (the pipeline's
  the median over its seeds), then `--epochs`' passes. Returns the printed
  rows ({'pipeline': ..., 'gensim': ...}) and the corpus's 'tokens'."""
  data_root = os.path.join(work, f'data-{name}')
  tokens = text_corpora.write(name, data_root, args.texts.get(name, ''))
  runs, homes = [], []
  for seed in range(args.seeds):
    homes.append(os.path.join(work, f'home-{name}-seed-{seed}'))
    runs.append(run_pipeline(data_root, homes[-1],
                             {**args.settings, 'trainer.seed': seed}))
  train_file = time_to_quality.train_split_file(
      homes[0], os.path.join(work, f'train-{name}.txt'))
  rows, theirs = _sides(homes[0], runs, train_file)
  ours = [t for _, t in runs]
  per_seed = [gensim_side.judged(t, theirs, ours, args.similarity)
              for t in ours]
  rows['pipeline']['figures'] = {
      key: gensim_side.median(f[key][0] for f in per_seed)
      for key in per_seed[0]}
  rows['gensim']['figures'] = {k: v[1] for k, v in per_seed[0].items()}
  judged_on = ', '.join(f'{k} {n:,}' for k, (_, _, n) in per_seed[0].items())
  corpus_table.print_corpus(
      name, tokens, rows, f'on the words every model knows: {judged_on} '
      f'(pipeline: median of {len(runs)} seeds)')
  passes_to_quality(name, data_root, work, args, rows['gensim']['train'],
                    lambda one: gensim_side.judged(one, theirs, ours,
                                                   args.similarity),
                    train_file)
  rows['tokens'] = tokens
  return rows


def run_items(work, args):
  seed = args.seed
  corpus = interaction_corpus.generate(
      os.path.join(work, 'data-items'),
      interaction_corpus.Shape(sequences=args.item_sequences, seed=seed))
  home = os.path.join(work, 'home-items')
  summary, ours = run_pipeline(corpus.data_root, home, args.settings)
  train_file = time_to_quality.train_split_file(
      home, os.path.join(work, 'train-items.txt'))
  rows, theirs = _sides(home, [(summary, ours)], train_file)
  heldout = time_to_quality.next_items(home, corpus)
  counts = {}
  with open(corpus.corpus_file, encoding='utf-8') as f:
    for line in f:
      for item in line.split():
        counts[item] = counts.get(item, 0) + 1
  items = quality.query_items(counts, 0, seed=seed)  # all seen 5 times
  for side, tables in (('pipeline', [ours]), ('gensim', theirs)):
    rows[side]['figures'] = {
        'HR@10': gensim_side.median(
            quality.hit_rate(t, heldout) for t in tables),
        'catP@10': gensim_side.median(
            quality.category_precision(t, corpus.categories, items)
            for t in tables)}
  corpus_table.print_corpus('items', corpus.events, rows,
               f'HR@10 of {len(heldout):,} next items neither learned from, '
               f'category P@10 of {len(items):,} items')
  passes_to_quality('items', corpus.data_root, work, args,
                    rows['gensim']['train'], lambda table: {
                        'HR@10': (quality.hit_rate(table, heldout),
                                  rows['gensim']['figures']['HR@10'],
                                  len(heldout)),
                        'catP@10': (quality.category_precision(
                            table, corpus.categories, items),
                                    rows['gensim']['figures']['catP@10'],
                                    len(items))},
                    train_file)
  return rows


def parse_args(argv=None):
  """The command line's arguments, its settings, texts and similarity sets
  read; exits with the parser's message on a bad one."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--corpora', default=','.join(TEXT + ('items',)))
  parser.add_argument('--item-sequences', type=int, default=2_000,
                      help='sequences of the generated interaction corpus')
  parser.add_argument('--seed', type=int, default=0,
                      help='seed of the generated interaction corpus')
  parser.add_argument('--seeds', type=int, default=1,
                      help='pipeline runs per text corpus (trainer.seed 0, '
                      '1, ...); its figures are their medians')
  parser.add_argument('--text', action='append', default=[],
                      metavar='NAME=PATH',
                      help='a tokenized text corpus (one sequence per line, '
                      'tokens separated by spaces) run as corpus NAME; '
                      'repeatable')
  parser.add_argument('--similarity', default='', metavar='DIR',
                      help='more similarity sets: every DIR/NAME.tsv or '
                      'NAME.txt ("word1<TAB>word2<TAB>score") is judged as '
                      'NAME')
  parser.add_argument('--work', help='keep corpora and homes here')
  run_arguments.add_passes(
      parser, 0.02, 'relative shortfall still counted as reached')
  args = parser.parse_args(argv)
  args.epochs = [int(e) for e in args.epochs.split(',') if e]
  args.settings = arguments.settings_of(args.set)
  try:
    args.texts = run_arguments.named_files(args.text, '--text')
    args.similarity = gensim_side.similarity_sets(
        gensim_side.similarity_files(args.similarity))
  except ValueError as e:
    parser.error(str(e))
  args.names = [n for n in args.corpora.split(',') if n] + list(args.texts)
  unknown = sorted(set(args.names) - set(TEXT) - {'items'} - set(args.texts))
  if unknown:
    parser.error(f'unknown corpus {unknown[0]!r}; choose from '
                 f'{", ".join(TEXT + ("items",))} or give it with --text')
  return args


def main(argv=None):
  args = parse_args(argv)
  print(f'pipeline: PipelineConfig() defaults'
        f'{" with " + str(args.settings) if args.settings else ""}; '
        f'gensim: Word2Vec(sg=1) defaults; {os.cpu_count()} cores')
  kernels_ready.build_first()
  with tempfile.TemporaryDirectory() as tmp:
    work = args.work or tmp
    for name in args.names:
      if name == 'items':
        run_items(work, args)
      else:
        run_text(name, work, args)


if __name__ == '__main__':
  np.seterr(all='ignore')
  main()
