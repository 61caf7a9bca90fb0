"""Time to quality on interaction-like data: this pipeline vs gensim Word2Vec.

    python -m benchmarks.time_to_quality [--sizes 1,10] [--epochs 1,2,5]
        [--rounds 3] [--set KEY=VALUE ...]

Baseline: gensim `Word2Vec` (skip-gram, same dim, window, negatives, epochs
and subsampling, 2 workers) on the same sequences. Both tables are scored
identically (`benchmarks.embedding_quality`): next-item hit rate@10 on
items neither learned from (each sequence's held-out last item, and every
item of the eval split's sequences after the ones before it: `next_items`),
and category precision@10 of nearest neighbours. The corpus is
`benchmarks.interaction_corpus` (50k items with Zipf popularity and latent
categories, sequences of 20-500 items), at each size multiple of
`--sequences`.

For each size the pipeline runs once per `--epochs` value, each in its own
home (from scratch, gated by the default gates with no pushed baseline). The
table prints seconds and ratios to gensim:
* trainer: the EmbeddingTrainer component's wall vs gensim's training;
* to quality: the trainer wall of the fewest epochs reaching gensim's
  quality on both metrics (within `--tolerance`), or "not reached";
* pipeline: the whole first run vs gensim's read + train;
* data steps: ExampleGen + Vocabulary, in MB/s of corpus;
* blessed: whether the default gates blessed the run's model;
then gensim's own figures after each `--epochs` value other than its
`--gensim-epochs` (first round, training seconds of that one run).
Both learn from the same sequences: gensim is given the train split (9 of 10
hash buckets by default) of the pipeline's first run, read from its Examples
into a text file; the eval split is the validator's.

`--rounds R` runs each pipeline run and gensim R times, alternating (the
pipeline in a fresh home each time), and prints median seconds; the quality
figures are the first round's (both sides are seeded). `--set KEY=VALUE`
changes a pipeline setting for every run, e.g. `table.optimizer=sgd`.
"""

import argparse
import collections
import glob
import io
import os
import statistics
import tempfile
import time

import numpy as np

from benchmarks import embedding_quality as quality
from benchmarks import interaction_corpus
from benchmarks import kernels_ready
from pipelines.cli import arguments

TRAINER_NODE = 'EmbeddingTrainer'
DATA_NODES = ('FileBasedExampleGen', 'Vocabulary')


def newest(home, node='FileBasedExampleGen', channel='examples'):
  """The URI of the latest artifact `node` put on `channel` in the local
  pipeline home (default: the Examples)."""
  runs = glob.glob(os.path.join(home, 'pipeline', node, channel, '*'))
  return max(runs, key=lambda p: int(os.path.basename(p)))


def train_split_file(home, out_path):
  """The sequences our trainer learned from (the first run's train split),
  one per line: what gensim is given, so both learn from the same data."""
  from tpu_embeddings.artifacts import examples_io
  with open(out_path, 'w', encoding='utf-8') as f:
    for tokens in examples_io.read_sequences(newest(home), 'train'):
      f.write(' '.join(tokens) + '\n')
  return out_path


def next_items(home, corpus):
  """[(query items, next item)] that neither side learned from: each
  sequence's held-out last item, and every item of the eval split's
  sequences (the split the trainer and gensim never see) after the items
  before it (at most QUERY_ITEMS). About 18x the last items alone, so
  HR@10's standard error is about a quarter."""
  from tpu_embeddings.artifacts import examples_io
  found = list(corpus.heldout)
  for tokens in examples_io.read_sequences(newest(home), 'eval'):
    found.extend((tokens[max(0, i - interaction_corpus.QUERY_ITEMS):i],
                  tokens[i]) for i in range(1, len(tokens)))
  return found


def gensim_run(corpus_file, dim, window, negatives, epochs, seed):
  from gensim.models import Word2Vec
  start = time.perf_counter()
  with open(corpus_file, encoding='utf-8') as f:
    sentences = [line.split() for line in f]
  read = time.perf_counter() - start
  start = time.perf_counter()
  model = Word2Vec(sentences, vector_size=dim, window=window,
                   negative=negatives, sg=1, epochs=epochs, min_count=1,
                   sample=1e-3, workers=2, seed=seed)
  train = time.perf_counter() - start
  vectors = model.wv
  return read, train, quality.Table(vectors.index_to_key, vectors.vectors)


def reaches(ours, theirs, tolerance):
  """Whether a figure is at least gensim's, less `tolerance` of its size
  (a Spearman correlation can be negative)."""
  return ours >= theirs - tolerance * abs(theirs)


def pipeline_run(corpus, home, dim, window, negatives, epochs, seed,
                 settings=()):
  """Runs the local pipeline (`settings`: more config keys, as `--set`
  takes them); returns its summary and the trained table."""
  import tensorflow as tf

  from pipelines import config as config_lib
  from pipelines.local import runner as local_runner
  from tpu_embeddings.artifacts import model_layout
  from tpu_embeddings.artifacts import vocabulary_file
  config = config_lib.PipelineConfig.from_dict({
      'table.dim': dim, 'trainer.window': window,
      'trainer.negatives': negatives, 'trainer.epochs': epochs,
      'trainer.train_steps': 0, 'seed': seed, 'vocabulary.min_count': 1,
      # From scratch, whatever the home holds.
      'trainer.warm_start_from_pushed': False,
      **arguments.settings_of(settings),
  })
  summary = local_runner.run(corpus.data_root, home, config,
                             out=io.StringIO())
  model_uri = summary['model']
  reader = tf.train.load_checkpoint(model_layout.latest_checkpoint(model_uri))
  table = reader.get_tensor(model_layout.table_key('tokens'))
  tokens = vocabulary_file.read(model_uri).tokens
  return summary, quality.Table(tokens, table)


def scores(table, corpus, heldout, items):
  return (quality.hit_rate(table, heldout),
          quality.category_precision(table, corpus.categories, items))


def run_size(multiple, args, work):
  shape = interaction_corpus.Shape(sequences=args.sequences * multiple,
                                   items=args.items, seed=args.seed)
  corpus = interaction_corpus.generate(
      os.path.join(work, f'data-{multiple}'), shape)
  counts = collections.Counter()
  with open(corpus.corpus_file, encoding='utf-8') as f:
    for line in f:
      counts.update(line.split())
  items = quality.query_items(counts, args.queries, seed=args.seed)
  megabytes = corpus.bytes / 1e6
  print(f'\n== corpus x{multiple}: {len(corpus.heldout):,} sequences, '
        f'{corpus.events:,} events, {len(counts):,} distinct items, '
        f'{megabytes:.1f} MB', flush=True)

  epochs = sorted(set(args.epochs))
  train_file = os.path.join(work, f'train-{multiple}.txt')  # gensim's input
  runs = []
  gensim_times = []
  for r in range(args.rounds):  # alternating, so load hits all alike
    for i, e in enumerate(epochs):
      # A home per run: no run is gated against another's pushed model.
      home = os.path.join(work, f'home-{multiple}-{e}-{r}')
      summary, ours = pipeline_run(corpus, home, args.dim, args.window,
                                   args.negatives, e, args.seed, args.set)
      if r == 0:
        runs.append((e, summary, ours, []))
      runs[i][3].append(summary['timing'])
      if i == 0:
        read, train, table = gensim_run(
            train_split_file(home, train_file), args.dim, args.window,
            args.negatives, args.gensim_epochs, args.seed)
        gensim_times.append((read, train))
  read = statistics.median(t[0] for t in gensim_times)
  train = statistics.median(t[1] for t in gensim_times)
  heldout = next_items(os.path.join(work, f'home-{multiple}-{epochs[0]}-0'),
                       corpus)
  g_hr, g_cp = scores(table, corpus, heldout, items)
  rows = [('baseline: gensim Word2Vec sg', args.gensim_epochs, train,
           read + train, None, g_hr, g_cp, '')]
  reached = None
  first_data = None
  for e, summary, ours, timings in runs:
    trainer = statistics.median(t['per_component'].get(
        TRAINER_NODE, float('nan')) for t in timings)
    data = statistics.median(sum(t['per_component'].get(n, 0.0)
                                 for n in DATA_NODES) for t in timings)
    wall = statistics.median(t['wall_seconds'] for t in timings)
    if first_data is None:
      first_data = data
    hr, cp = scores(ours, corpus, heldout, items)
    rows.append((f'pipeline trainer ({summary.get("training", {}).get("steps")}'
                 ' steps)', e, trainer,
                 wall if e == epochs[0] else None,
                 data, hr, cp, 'yes' if summary.get('blessed') else 'NO'))
    good = (reaches(hr, g_hr, args.tolerance) and
            reaches(cp, g_cp, args.tolerance))
    if good and (reached is None or trainer < reached[1]):
      reached = (e, trainer)
  for e in epochs:  # what gensim gives in as few epochs, for comparison
    if e != args.gensim_epochs:
      _, seconds, fewer = gensim_run(
          train_file, args.dim, args.window, args.negatives, e, args.seed)
      rows.append(('gensim Word2Vec sg, fewer epochs', e, seconds, None,
                   None, *scores(fewer, corpus, heldout, items), ''))

  print(f'{"run":<36} {"epochs":>6} {"train s":>8} {"x gensim":>8} '
        f'{"whole s":>8} {"x gensim":>8} {"HR@10":>7} {"catP@10":>7} '
        f'{"blessed":>7}')
  for name, e, t, whole, _, hr, cp, blessed in rows:
    whole_cells = (f'{whole:>8.1f} {whole / (read + train):>8.2f}'
                   if whole is not None else f'{"":>8} {"":>8}')
    print(f'{name:<36} {e:>6} {t:>8.1f} {t / train:>8.2f} {whole_cells} '
          f'{hr:>7.3f} {cp:>7.3f} {blessed:>7}')
  if reached:
    print(f'to gensim quality (-{args.tolerance:.0%}): {reached[0]} epochs, '
          f'trainer {reached[1]:.1f}s = {reached[1] / train:.2f}x gensim '
          f'training ({train:.1f}s)')
  else:
    print(f'to gensim quality (-{args.tolerance:.0%}): not reached with '
          f'epochs {epochs}')
  print(f'data steps (ExampleGen + Vocabulary, first run): {first_data:.1f}s '
        f'= {megabytes / max(first_data, 1e-9):.1f} MB/s; gensim read '
        f'{read:.1f}s = {megabytes / max(read, 1e-9):.1f} MB/s')
  return rows


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='1,10',
                      help='corpus sizes as multiples of --sequences')
  parser.add_argument('--sequences', type=int, default=2_000)
  parser.add_argument('--items', type=int, default=50_000)
  parser.add_argument('--dim', type=int, default=64)
  parser.add_argument('--window', type=int, default=50)
  parser.add_argument('--negatives', type=int, default=5)
  parser.add_argument('--gensim-epochs', type=int, default=5)
  parser.add_argument('--epochs', default='1,2,5',
                      help='pipeline epochs tried for time to quality')
  parser.add_argument('--queries', type=int, default=0,
                      help='items sampled for category precision (0: every '
                      'item seen 5 times)')
  parser.add_argument('--tolerance', type=float, default=0.02,
                      help='relative shortfall still counted as reached')
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--rounds', type=int, default=1,
                      help='runs of each side; times are medians')
  parser.add_argument('--work', help='keep corpora and homes here')
  parser.add_argument('--set', action='append', default=[],
                      metavar='KEY=VALUE',
                      help='another pipeline setting, as the CLI takes it '
                      '(e.g. table.learning_rate=4); repeatable')
  args = parser.parse_args(argv)
  args.epochs = [int(e) for e in args.epochs.split(',')]
  sizes = [int(s) for s in args.sizes.split(',')]
  print(f'dim {args.dim}, window {args.window}, negatives {args.negatives}, '
        f'{args.items:,} items; gensim {args.gensim_epochs} epochs, 2 workers; '
        f'quality on held-out next items (last and eval split) and '
        f'{args.queries or "all"} category queries')
  kernels_ready.build_first()
  with tempfile.TemporaryDirectory() as tmp:
    work = args.work or tmp
    for multiple in sizes:
      run_size(multiple, args, work)


if __name__ == '__main__':
  np.seterr(all='ignore')
  main()
