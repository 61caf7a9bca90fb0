"""Seconds per million tokens as the corpus grows: the trainer vs gensim.

    python -m benchmarks.trainer_scale [--sizes 1,10,100] [--rounds 3]
        [--rounds-up-to 10] [--work DIR] [--set trainer.KEY=VALUE ...]

For each size (millions of train tokens) a corpus of Zipf(1) tokens over a
30k vocabulary, lines of 10-40 tokens (benchmarks.skipgram_corpus; every
10th line goes to the eval split), is written as Examples, a vocabulary
(tokens counted at least `--min-count` times, as VocabularyGen keeps) and a
text file of the train lines. Then, each in a fresh process with the
pipeline CLI's malloc setting (tpu_embeddings/core/huge_pages.py):

  trainer   the EmbeddingTrainer executor's `train` with the pipeline's
            default settings (and `--set`'s) and one epoch: its
            checks, the held-out sample, reading the Examples, training,
            checkpoints and TensorBoard files. Timed inside the process;
            the import of TensorFlow and TFX is reported apart.
  gensim    the baseline: `Word2Vec(corpus_file=..., sg=1)` on the text
            file with the same dim, window, negatives, subsampling and
            min_count, one epoch, 2 workers: its read and its training
            (gensim reads a corpus file in its worker threads, so the two
            are one figure).

With `--rounds R`, each size up to `--rounds-up-to` millions (default 10)
runs both sides R times (default 3) in alternation and the table gives
medians; larger sizes run once. The table prints seconds, seconds per
million tokens, the trainer's ratio to gensim, and each per-token cost
relative to the smallest size's (flat scaling is 1.0). Targets (issue
#25): per-token cost flat within 1.2x from 1M to 100M tokens, and at most
2x gensim's.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import kernels_ready
from benchmarks import skipgram_corpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_corpus(directory: str, million_tokens: float, min_count: int):
  """The size's corpus; (Examples URI, vocabulary URI, text file, tokens)."""
  from tpu_embeddings.artifacts import vocabulary_file
  # Every 10th line goes to eval: write 10/9 of the train tokens.
  lines = skipgram_corpus.zipf_lines(int(million_tokens * 1e6 * 10 / 9),
                                     10, 40, seed=0)
  corpus = skipgram_corpus.write(directory, lines, eval_every=10)
  kept = [(t, c) for t, c in zip(corpus.tokens, corpus.counts)
          if c >= min_count]
  vocabulary = os.path.join(directory, 'vocabulary')
  vocabulary_file.write(vocabulary, vocabulary_file.TokenCounts(
      tuple(t for t, _ in kept), tuple(c for _, c in kept)))
  return corpus.examples_uri, vocabulary, corpus.text_file, corpus.total_tokens


def train_child(examples_uri: str, vocabulary_uri: str, out: str,
                settings: str):
  """In a fresh process: the trainer with the defaults but `settings`
  (JSON), one epoch."""
  start = time.perf_counter()
  from components.trainer import executor
  from pipelines import config as config_lib
  from tests.support.artifact_fixtures import SpanlessExamples
  imported = time.perf_counter() - start
  config = config_lib.PipelineConfig.from_dict({
      **json.loads(settings), 'trainer.epochs': 1,
      'trainer.warm_start_from_pushed': False}).trainer_config()
  args = executor.TrainerArgs([SpanlessExamples(examples_uri)],
                              vocabulary_uri, os.path.join(out, 'model'),
                              os.path.join(out, 'run'))
  start = time.perf_counter()
  metadata = executor.train(args, config)
  return {'import': imported, 'train': time.perf_counter() - start,
          'steps': metadata['steps'],
          'pairs_per_sec': metadata['examples_per_sec'],
          'window': config.window, 'negatives': config.negatives,
          'subsample': config.subsample}


def gensim_child(text_file: str, dim: int, window: int, negatives: int,
                 subsample: float, min_count: int):
  from gensim.models import Word2Vec
  start = time.perf_counter()
  Word2Vec(corpus_file=text_file, vector_size=dim, window=window,
           negative=negatives, sg=1, sample=subsample, min_count=min_count,
           epochs=1, workers=2, seed=0)
  return {'read_train': time.perf_counter() - start}


def in_child(*argv):
  """Runs a child under the CLI's malloc setting (huge pages), both sides."""
  from tpu_embeddings.core import huge_pages
  done = subprocess.run([sys.executable, '-m', 'benchmarks.trainer_scale',
                         '--child', *map(str, argv)], cwd=ROOT, check=True,
                        capture_output=True, text=True,
                        env=huge_pages.environ(os.environ))
  return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='1,10,100',
                      help='millions of train tokens')
  parser.add_argument('--dim', type=int, default=64,
                      help='the pipeline default table.dim')
  parser.add_argument('--min-count', type=int, default=5,
                      help='the pipeline default vocabulary.min_count')
  parser.add_argument('--work', help='keep corpora and outputs here')
  parser.add_argument('--rounds', type=int, default=3,
                      help='runs of each side per size (medians reported)')
  parser.add_argument('--rounds-up-to', type=float, default=10,
                      help='larger sizes run once')
  parser.add_argument('--set', action='append', default=[],
                      metavar='KEY=VALUE', help='a trainer setting; repeatable')
  parser.add_argument('--child', nargs='+', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.child:
    kind, rest = args.child[0], args.child[1:]
    if kind == 'trainer':
      print(json.dumps(train_child(*rest)))
    else:
      text, dim, window, negatives, subsample, min_count = rest
      print(json.dumps(gensim_child(text, int(dim), int(window),
                                    int(negatives), float(subsample),
                                    int(min_count))))
    return
  from pipelines.cli import arguments
  settings = arguments.settings_of(args.set)
  print(f'{os.cpu_count()} CPUs; load average '
        f'{" ".join(f"{x:.2f}" for x in os.getloadavg())}; pipeline '
        f'defaults{" with " + str(settings) if settings else ""}, one epoch; '
        'gensim Word2Vec(corpus_file, sg=1), 2 workers', flush=True)
  kernels_ready.build_first()
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    work = args.work or tmp
    for size in [float(s) for s in args.sizes.split(',')]:
      directory = os.path.join(work, f'{size:g}M')
      start = time.perf_counter()
      examples, vocabulary, text, tokens = write_corpus(directory, size,
                                                        args.min_count)
      print(f'{size:g}M: corpus written in {time.perf_counter() - start:.0f}'
            f' s ({tokens:,} train tokens)', flush=True)
      runs = []
      for _ in range(args.rounds if size <= args.rounds_up_to else 1):
        out = os.path.join(directory, 'out')
        shutil.rmtree(out, ignore_errors=True)  # a kept --work would resume
        ours = in_child('trainer', examples, vocabulary, out,
                        json.dumps(settings))
        theirs = in_child('gensim', text, args.dim, ours['window'],
                          ours['negatives'], ours['subsample'],
                          args.min_count)
        runs.append((ours, theirs))
        print(f'{size:g}M: trainer {ours["train"]:.1f} s (+'
              f'{ours["import"]:.1f} s import, {ours["pairs_per_sec"]:,.0f} '
              f'pairs/s), gensim {theirs["read_train"]:.1f} s', flush=True)
      rows.append((size, tokens, medians([o for o, _ in runs]),
                   medians([t for _, t in runs])))
  report(rows)


def medians(runs):
  """Each figure's median over the runs."""
  return {key: statistics.median(r[key] for r in runs)
          for key in runs[0] if isinstance(runs[0][key], (int, float))}


def report(rows):
  print(f'\n{"tokens":>8} {"trainer s":>10} {"s/Mtok":>8} {"gensim s":>9} '
        f'{"s/Mtok":>8} {"x gensim":>9} {"trainer/1st":>12} '
        f'{"gensim/1st":>11}')
  first = None
  for size, tokens, ours, theirs in rows:
    ours_per = ours['train'] / (tokens / 1e6)
    theirs_per = theirs['read_train'] / (tokens / 1e6)
    first = first or (ours_per, theirs_per)
    print(f'{size:>7g}M {ours["train"]:>10.1f} {ours_per:>8.2f} '
          f'{theirs["read_train"]:>9.1f} {theirs_per:>8.2f} '
          f'{ours_per / theirs_per:>9.2f} {ours_per / first[0]:>12.2f} '
          f'{theirs_per / first[1]:>11.2f}')
  print('targets: trainer/1st within 1.2 at every size; x gensim <= 2')


if __name__ == '__main__':
  main()
