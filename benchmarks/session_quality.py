"""The item config on real sessions: next-item HR@10 and time, vs gensim.

    python -m benchmarks.session_quality --events NAME=PATH [...]
        [--seeds 3] [--epochs 1,2,3] [--config examples/item_sequences.json]
        [--set KEY=VALUE ...] [--work DIR]

For each events file (`benchmarks.session_events`: every session's items
in time order, its last item held out) the local pipeline runs `--seeds`
times (trainer.seed 0, 1, ...) with `--config` (the item config) and
`vocabulary.min_count=1`, `table.dim=64`, no warm start (then `--set`);
gensim `Word2Vec(sg=1)` with the comparable settings (dim 64, window 50,
min_count 1, sample 1e-3, 5 epochs, its 5 negatives) runs `--seeds` times
(seed 0, 1, ...) with 2 workers and with 3, on the pipeline's train split
(read back from its Examples), and with 2 workers on every written sequence
(train and eval split: what the split costs the pipeline). The sides take
turns: each seed's pipeline run, then gensim's runs of that seed, so that a
slow stretch of a shared machine falls on both sides of a seed.

Figures (each a median over seeds, ± the binomial standard error on the
items judged):
* HR@10 last: on each session's held-out last item, which no side learned
  from;
* HR@10 next: on those and on every item of the eval split's sequences
  after the items before it (`time_to_quality.next_items`), which neither
  the pipeline nor gensim on the train split learned from; gensim on every
  sequence has no such figure.
Seconds: the EmbeddingTrainer component's (from the run summary) against
gensim's training (sentences already in memory); `x gensim` is against
gensim with 2 workers on the train split.

With `--epochs`, the pipeline runs again (seed 0) at each number of passes,
and the fewest passes whose HR@10 next is within `--tolerance` (absolute)
of gensim's is its time to quality.
"""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from benchmarks import embedding_quality as quality
from benchmarks import kernels_ready
from benchmarks import real_corpora
from benchmarks import run_arguments
from benchmarks import session_events
from benchmarks import time_to_quality
from pipelines.cli import arguments

ITEM_CONFIG = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'examples', 'item_sequences.json')
DIM = 64
# What every pipeline run sets beside the item config (gensim's min_count,
# a fresh table whatever a home holds).
FIXED = {'vocabulary.min_count': 1, 'table.dim': DIM,
         'trainer.warm_start_from_pushed': False}
# gensim's settings comparable to the item config's.
GENSIM = {'vector_size': DIM, 'window': 50, 'min_count': 1, 'sample': 1e-3,
          'epochs': 5, 'negative': 5, 'sg': 1}
WORKERS = (2, 3)


def gensim_run(sentences, seed, workers):
  """gensim on `sentences` (lists of items) once; (training seconds, table).
  """
  from gensim.models import Word2Vec
  start = time.perf_counter()
  model = Word2Vec(sentences, workers=workers, seed=seed, **GENSIM)
  return (time.perf_counter() - start,
          quality.Table(model.wv.index_to_key, model.wv.vectors))


def _read_sentences(path):
  with open(path, encoding='utf-8') as f:
    return [line.split() for line in f]


def _settings(args, seed, epochs=None):
  settings = {**args.config, **FIXED, **args.settings, 'trainer.seed': seed}
  if epochs is not None:
    settings['trainer.epochs'] = epochs
  return settings


def _row(label, tables, seconds, judged, runs=None):
  """A printed side: {figure: median over tables} and its seconds."""
  figures = {name: statistics.median(quality.hit_rate(t, items)
                                     for t in tables)
             for name, items in judged.items()}
  row = {'label': label, 'figures': figures, 'train': seconds}
  if runs:
    row['whole'] = statistics.median(s['timing']['wall_seconds']
                                     for s in runs)
    blessed = sum(bool(s.get('blessed')) for s in runs)
    row['blessed'] = f'{blessed}/{len(runs)}'
  return row


def _trainer_seconds(summary):
  return summary['timing']['per_component'].get(time_to_quality.TRAINER_NODE,
                                                float('nan'))


def print_rows(rows, judged, base):
  print(f'{"side":<34} {"HR@10 last":>14} {"HR@10 next":>14} '
        f'{"train s":>8} {"x gensim":>8} {"whole s":>8} {"blessed":>7}')
  for row in rows:
    cells = []
    for name, items in judged.items():
      value = row['figures'].get(name)
      error = quality.standard_error(value or 0.0, len(items))
      cells.append(f'{"-":>14}' if value is None else
                   f'{value:>7.3f} ±{error:.3f}')
    whole = row.get('whole')
    print(f'{row["label"]:<34} {" ".join(cells)} {row["train"]:>8.1f} '
          f'{row["train"] / base:>8.2f} '
          f'{"-" if whole is None else format(whole, ".1f"):>8} '
          f'{row.get("blessed", "-"):>7}', flush=True)


def passes_to_quality(name, sessions, work, args, judged, target, base):
  """The pipeline (seed 0) at each of `args.epochs`; prints each run and
  the fewest passes within `args.tolerance` of `target` on HR@10 next."""
  print(f'{"passes":>6} {"trainer s":>9} {"x gensim":>8} '
        f'{"HR@10 last":>10} {"HR@10 next":>10} {"blessed":>7}')
  reached = None
  for epochs in args.epochs:
    summary, table = real_corpora.run_pipeline(
        sessions.data_root, os.path.join(work, f'home-{name}-{epochs}-passes'),
        _settings(args, 0, epochs))
    seconds = _trainer_seconds(summary)
    last, nxt = (quality.hit_rate(table, judged[k]) for k in ('last', 'next'))
    if reached is None and nxt >= target - args.tolerance:
      reached = (epochs, seconds)
    print(f'{epochs:>6} {seconds:>9.1f} {seconds / base:>8.2f} '
          f'{last:>10.3f} {nxt:>10.3f} '
          f'{"yes" if summary.get("blessed") else "NO":>7}', flush=True)
  print(f'to gensim HR@10 next {target:.3f} (-{args.tolerance}): ' + (
      f'{reached[0]} passes, trainer {reached[1]:.1f}s = '
      f'{reached[1] / base:.2f}x gensim training ({base:.1f}s)' if reached
      else f'not reached with passes {args.epochs}'), flush=True)


def run_events(name, sequences, work, args):
  """One events file's `sequences`: per seed, the pipeline and then gensim
  with each number of workers, so that both sides of a seed run in the same
  minutes of a machine whose speed drifts; prints the table (and time to
  quality with `--epochs`)."""
  sessions = session_events.write(sequences,
                                  os.path.join(work, f'data-{name}'))
  runs = []
  # gensim's rows: {label: (on the train split, not every sequence;
  # workers)}, and each one's ([seconds], [tables]) over the seeds.
  sides = {f'gensim {w} workers, train split': (True, w) for w in WORKERS}
  sides[f'gensim {WORKERS[0]} workers, all sequences'] = (False, WORKERS[0])
  gensim = {label: ([], []) for label in sides}
  train_sentences = all_sentences = judged = None
  for seed in range(args.seeds):
    home = os.path.join(work, f'home-{name}-seed-{seed}')
    runs.append(real_corpora.run_pipeline(sessions.data_root, home,
                                          _settings(args, seed)))
    if judged is None:
      judged = {'last': sessions.heldout,
                'next': time_to_quality.next_items(home, sessions)}
      train_sentences = _read_sentences(time_to_quality.train_split_file(
          home, os.path.join(work, f'train-{name}.txt')))
      all_sentences = _read_sentences(sessions.corpus_file)
    for label, (on_train, workers) in sides.items():
      took, table = gensim_run(
          train_sentences if on_train else all_sentences, seed, workers)
      gensim[label][0].append(took)
      gensim[label][1].append(table)
  summaries = [s for s, _ in runs]
  rows = [_row(f'pipeline, train split ({args.seeds} seeds)',
               [t for _, t in runs],
               statistics.median(map(_trainer_seconds, summaries)), judged,
               summaries)]
  for label, (seconds, tables) in gensim.items():
    rows.append(_row(label, tables, statistics.median(seconds),
                     judged if sides[label][0] else
                     {'last': sessions.heldout}))
  print(f'\n== {name}: {len(sessions.heldout):,} sessions '
        f'({sessions.skipped:,} of one event left out), '
        f'{sessions.events:,} events written, {sessions.items:,} items; '
        f'HR@10 last on {len(judged["last"]):,} items, next on '
        f'{len(judged["next"]):,}', flush=True)
  base = rows[1]['train']
  print_rows(rows, judged, base)
  if args.epochs:
    passes_to_quality(name, sessions, work, args, judged,
                      rows[1]['figures']['next'], base)
  return rows


def parse_args(argv=None):
  """(the command line's arguments, {events name: its sequences}); exits
  with the parser's message on a bad one."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--events', action='append', default=[],
                      metavar='NAME=PATH', required=True,
                      help='a CSV of user_or_session,item,timestamp rows; '
                      'repeatable')
  parser.add_argument('--seeds', type=int, default=3,
                      help='runs of each side (seeds 0, 1, ...); figures '
                      'and seconds are their medians')
  parser.add_argument('--config', default=ITEM_CONFIG,
                      help='the pipeline settings (JSON, as the CLI takes)')
  run_arguments.add_passes(
      parser, 0.005, 'HR@10 shortfall still counted as reached')
  parser.add_argument('--work', help='keep data roots and homes here')
  args = parser.parse_args(argv)
  if args.seeds < 1:
    parser.error(f'--seeds {args.seeds}: give at least 1')
  args.epochs = [int(e) for e in args.epochs.split(',') if e]
  args.settings = arguments.settings_of(args.set)
  try:
    files = run_arguments.named_files(args.events, '--events')
    sequences = {name: session_events.read(path)
                 for name, path in files.items()}
    args.config = arguments.config_file_settings(args.config)
  except (OSError, ValueError) as e:
    parser.error(str(e))
  return args, sequences


def main(argv=None):
  args, sequences = parse_args(argv)
  print(f'pipeline: {args.config} + {FIXED}'
        f'{" + " + str(args.settings) if args.settings else ""}; gensim '
        f'Word2Vec {GENSIM}; {os.cpu_count()} cores')
  kernels_ready.build_first()
  with tempfile.TemporaryDirectory() as tmp:
    work = args.work or tmp
    for name, found in sequences.items():
      run_events(name, found, work, args)


if __name__ == '__main__':
  np.seterr(all='ignore')
  main()
