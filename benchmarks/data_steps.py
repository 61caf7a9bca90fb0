"""Data steps throughput: ExampleGen + Vocabulary in MB/s of corpus.

    python -m benchmarks.data_steps [--sizes 20,200] [--beam-args ...]

Runs a pipeline of just the corpus ExampleGen and the Vocabulary with
LocalDagRunner and the local runner's Beam options, on generated corpora of
about `--sizes` MB (lines of 6-16 tokens drawn with Zipf popularity from
`--vocab` distinct tokens, like the demo corpus but with a larger table).

Baseline (the floor): one plain-Python pass over the same files counting
tokens with `collections.Counter`, measured in the same run. The table prints
each step's seconds and MB/s, and the data steps' wall as a ratio of it.
"""

import argparse
import collections
import glob
import io
import os
import shlex
import tempfile
import time

import numpy as np

FILE_MB = 20  # one corpus file per 20 MB, like the parts of a real export
NODES = ('ExampleGen', 'Vocabulary')


def generate(out_dir: str, megabytes: float, vocab: int, seed: int = 0) -> str:
  """Writes `<out_dir>/span-1/part-*.txt` of about `megabytes` MB (kept)."""
  span = os.path.join(out_dir, 'span-1')
  if os.path.isdir(span):
    return out_dir
  tmp = os.path.join(out_dir, '.span-1.tmp')
  os.makedirs(tmp, exist_ok=True)
  rng = np.random.default_rng(seed)
  names = np.array([f'tok-{i:06d}' for i in range(vocab)], dtype=object)
  cumulative = np.cumsum(1.0 / np.arange(1, vocab + 1) ** 1.0)
  target = int(megabytes * 1_000_000)
  part = 0
  while target > 0:
    size = min(target, FILE_MB * 1_000_000)
    lengths = rng.integers(6, 17, max(1, size // 50))
    tokens = names[np.searchsorted(cumulative,
                                   rng.random(lengths.sum()) * cumulative[-1])]
    ends = np.cumsum(lengths)
    with open(os.path.join(tmp, f'part-{part:05d}.txt'), 'w') as f:
      written = start = 0
      for end in ends:
        line = ' '.join(tokens[start:end]) + '\n'
        start = end
        f.write(line)
        written += len(line)
        if written >= size:
          break
    target -= written
    part += 1
  os.rename(tmp, span)
  return out_dir


def counter_pass(files, repeats: int = 3) -> float:
  """The floor: read every file once and count its tokens (best of
  `repeats`: the machine may be shared)."""
  best = float('inf')
  for _ in range(repeats):
    start = time.perf_counter()
    counts = collections.Counter()
    for path in files:
      with open(path, 'rb') as f:
        for line in f:
          counts.update(line.split())
    best = min(best, time.perf_counter() - start)
  return best


def pipeline_pass(data_root: str, home: str, beam_args) -> dict:
  """Runs ExampleGen + Vocabulary; returns seconds per NODES name."""
  from tfx.orchestration import metadata
  from tfx.orchestration import pipeline as tfx_pipeline
  from tfx.orchestration.local.local_dag_runner import LocalDagRunner

  from components.corpus_example_gen.component import corpus_example_gen
  from components.vocabulary.component import VocabularyGen
  from pipelines.local import launches
  example_gen = corpus_example_gen(data_root)
  vocabulary = VocabularyGen(examples=example_gen.outputs['examples'])
  pipeline = tfx_pipeline.Pipeline(
      pipeline_name='data-steps', pipeline_root=os.path.join(home, 'root'),
      components=[example_gen, vocabulary], enable_cache=False,
      metadata_connection_config=metadata.sqlite_metadata_connection_config(
          os.path.join(home, 'metadata.sqlite')),
      beam_pipeline_args=beam_args)
  progress = launches.Launches(io.StringIO())
  with progress:
    LocalDagRunner().run(pipeline)
  return dict(zip(NODES, (progress.timings[c.id]
                          for c in (example_gen, vocabulary))))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='20,200', help='corpus sizes in MB')
  parser.add_argument('--vocab', type=int, default=50_000)
  parser.add_argument('--beam-args', default=None,
                      help='Beam options (default: the local runner\'s)')
  parser.add_argument('--work', help='keep corpora here (reused if present)')
  args = parser.parse_args(argv)
  from pipelines.local import runner as local_runner
  beam_args = (shlex.split(args.beam_args) if args.beam_args is not None
               else list(local_runner.BEAM_ARGS))
  print(f'Beam options: {" ".join(beam_args)}; {args.vocab:,} distinct '
        f'tokens; {os.cpu_count()} cores')
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    work = args.work or tmp
    for mb in (float(s) for s in args.sizes.split(',')):
      data = generate(os.path.join(work, f'corpus-{mb:g}mb'), mb, args.vocab)
      files = sorted(glob.glob(os.path.join(data, 'span-1', '*')))
      size = sum(os.path.getsize(f) for f in files) / 1e6
      floor = counter_pass(files)
      with tempfile.TemporaryDirectory(dir=work) as home:
        seconds = pipeline_pass(data, home, beam_args)
      rows.append((size, floor, seconds))
  print(f'{"corpus MB":>9} {"step":<22} {"seconds":>8} {"MB/s":>7} '
        f'{"x floor":>8}')
  for size, floor, seconds in rows:
    both = sum(seconds[n] for n in NODES)
    for name, s in ([('floor: Counter pass', floor)] +
                    [(n, seconds[n]) for n in NODES] +
                    [('ExampleGen+Vocabulary', both)]):
      print(f'{size:>9.1f} {name:<22} {s:>8.2f} {size / s:>7.1f} '
            f'{s / floor:>8.2f}')


if __name__ == '__main__':
  main()
