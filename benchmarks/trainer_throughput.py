"""CPU trainer throughput: the step alone and the live trainer, in pairs/s.

    python -m benchmarks.trainer_throughput [--presets defaults,window50]
        [--rounds 3] [--steps 300] [--live-steps 2000] [--shared 16 --group 64]

Two presets, each on its own generated corpus (benchmarks.skipgram_corpus:
Zipf(1) tokens over a 30k vocabulary, written as an Examples artifact and as
text): `defaults` is window 3, dim 32 on lines of 6-16 tokens (short
sequences, where the input pipeline dominates); `window50` is window 50, dim
64 on lines of 20-500 tokens. All runs: batch 2048, 5 negatives,
subsampling 1e-3, one table, Adagrad at learning rate 1.0 from an
accumulator of 1e-3. The trainer's defaults are window 5, dim 64 and a
contexts table: these presets measure the step and the input pipeline
against their baselines, not the defaults.

Step alone: every row trains on the same 200 batches, made once by the
trainer's pipeline and held in memory.
  baseline: Keras `Embedding` + dot-product logits + sigmoid cross-entropy +
    Keras Adagrad, compiled with steps_per_execution = --steps (one compiled
    loop per round, as the trainer runs its steps in one tf.function call);
  Keras with plain `fit` (a call per step), for reference;
  the CPU adapter's TensorFlow step (today's trainer);
  the fused SkipGramStep op (tpu_embeddings/training/fused_step.py).
Live: from the Examples artifact on disk through an input pipeline into a
step, --live-steps steps per round in the training loop's compiled runner
(training_loop.CompiledSteps), from a fresh iterator each round:
  today: SkipGramData.batches (per-sequence parse and lookup) + the CPU
    adapter's TensorFlow step;
  new: SkipGramBatches.id_sequences/batches (block reads, pair ops) + the
    fused step; first pass, and later passes (timed after a whole untimed
    pass, reading the ids it kept in memory, as the trainer's passes after
    its first do);
  new, stacks: the first pass again, STACK batches per call of the op in
    the trainer's runner of stacks (training_loop.CompiledSteps, stacked),
    as the trainer runs the fused op;
  shared: the same with shared negatives (--shared S negatives per group of
    --group pairs, weighted K/S; 0: no such row);
  gensim Word2Vec (sg=1, the same window, dim, negatives and sample, 2
    workers, min_count=1), given the corpus's sequences as token lists (read
    before timing) and trained one epoch per round. Its pairs/s are the
    epoch's expected pairs (SkipGramBatches.pairs_per_epoch: gensim draws its
    reduced windows and subsamples by the same rules) over its training
    seconds.
Rounds alternate between rows, so load from other processes hits all alike;
each figure is the median round; the load average is printed before and
after. Targets (issue #25): live >= 1M pairs/s and >= 0.8x gensim's pairs/s;
the step is judged against the steps_per_execution Keras baseline.
"""

import argparse
import math
import os
import statistics
import tempfile
import time

import numpy as np

from benchmarks import skipgram_corpus
from benchmarks.keras_skipgram import keras_model

PRESETS = {
    # name: (window, dim, min_length, max_length, corpus tokens)
    'defaults': (3, 32, 6, 16, 2_000_000),
    'window50': (50, 64, 20, 500, 400_000),
}
BATCH, NEGATIVES, CACHED_BATCHES = 2048, 5, 200
STACK = 10  # batches per op call: the trainer's at log_every 100


class Clock:
  """Wall and process CPU time (every thread) since it was made."""

  def __init__(self):
    self.wall, self.cpu = time.perf_counter(), time.process_time()

  def rates(self, pairs):
    """(pairs per wall second, pairs per CPU second)."""
    return (pairs / (time.perf_counter() - self.wall),
            pairs / max(time.process_time() - self.cpu, 1e-9))


def trainer_parts(corpus, window, dim):
  """(config, spec, a built CpuAdapter with the TensorFlow step)."""
  from tpu_embeddings.models.skipgram_config import SkipGramConfig
  from tpu_embeddings.models.skipgram_features import skipgram_spec
  from tpu_embeddings.training import cpu_adapter
  # Per-pair negatives: what the Keras baseline scores; the shared row
  # sets its own.
  config = SkipGramConfig(batch_size=BATCH, window=window,
                          negatives=NEGATIVES, shared_negatives=0)
  spec = skipgram_spec(dim=dim, vocabulary_size=len(corpus.tokens),
                       learning_rate=1.0, initial_accumulator_value=1e-3)
  adapter = cpu_adapter.for_skipgram(spec, BATCH, fused=False)
  adapter.build()
  return config, spec, adapter


def fused_on(adapter, negative_weight: float = 1.0, stacks: bool = False):
  """The SkipGramStep op on `adapter`'s variables, in the training loop's
  compiled runner (training_loop.CompiledSteps), or with `stacks` in the
  trainer's runner of stacks of batches (the same, stacked)."""
  from tpu_embeddings.training import fused_step
  from tpu_embeddings.training import training_loop
  from tpu_embeddings.training.learning_rate import LinearDecay
  optimizer = adapter._rules['tokens'].optimizer
  step = fused_step.for_adapter(adapter.spec, optimizer, adapter.variables,
                                BATCH, negative_weight=negative_weight)
  if step is None:
    raise SystemExit('the SkipGramStep op is unavailable (see the log)')
  if stacks:
    return training_loop.CompiledSteps(step.stacked,
                                       adapter.learning_rate_scale,
                                       LinearDecay(0), stacked=True)
  return training_loop.CompiledSteps(
      step, adapter.learning_rate_scale, LinearDecay(0), user_code=False)


def step_rows(corpus, config, dim, adapter, steps):
  """{row: callable running one round -> pairs/s} on cached batches."""
  import tensorflow as tf

  from tpu_embeddings.artifacts import examples_io
  from tpu_embeddings.models.skipgram import SkipGramData
  data = SkipGramData(corpus.tokens, corpus.counts, config)
  batches = data.batches(examples_io.token_dataset(corpus.examples_uri,
                                                   'train'))
  batches = batches.take(CACHED_BATCHES).cache()
  for _ in batches:  # fill the cache
    pass
  iterator = iter(batches.repeat())
  # The adapter's step takes the built-in module's (ids, extras) batches.
  adapter_iterator = iter(batches.map(lambda f: (f, {})).repeat())
  fused_train = fused_on(adapter)
  labels = tf.concat([tf.ones([BATCH, 1]), tf.zeros([BATCH, NEGATIVES])], 1)
  keras_data = batches.map(lambda f: (f, labels)).repeat()
  looped = keras_model(len(corpus.tokens), dim, NEGATIVES, steps)
  plain = keras_model(len(corpus.tokens), dim, NEGATIVES, 1)

  def timed(run):
    def round_():
      clock = Clock()
      run()
      return clock.rates(steps * BATCH)
    run()  # trace and warm up
    return round_

  return {
      'baseline: Keras, steps_per_execution': timed(lambda: looped.fit(
          keras_data, steps_per_epoch=steps, epochs=1, verbose=0)),
      'Keras, plain fit': timed(lambda: plain.fit(
          keras_data, steps_per_epoch=steps, epochs=1, verbose=0)),
      'CPU adapter, TensorFlow step': timed(
          lambda: adapter.train(adapter_iterator, steps)),
      'fused SkipGramStep op': timed(lambda: fused_train(iterator, steps)),
  }


def shared_row(corpus, config, adapter, args):
  """{row: round} of the live trainer with shared negatives."""
  from tpu_embeddings.models.skipgram import SkipGramData
  from tpu_embeddings.models.skipgram_input import SkipGramBatches
  shared = config.replace(shared_negatives=args.shared,
                          negative_group=args.group)
  train = fused_on(adapter, shared.negative_weight)
  made = SkipGramBatches(SkipGramData(corpus.tokens, corpus.counts, shared))
  return {f'live shared {args.shared}/{args.group}: + fused op': live_round(
      lambda: made.batches(made.id_sequences([corpus.examples_uri], 'train')),
      train, args.live_steps)}


def live_round(make_batches, train, live_steps, untimed=5):
  """A round of `live_steps` steps from a fresh iterator, after `untimed`
  steps (which start the pipeline and trace on the first round) -> pairs/s."""
  def round_():
    iterator = iter(make_batches().repeat())
    train(iterator, untimed)
    clock = Clock()
    done = train(iterator, live_steps).size
    return clock.rates(done * BATCH)
  return round_


def live_rows(corpus, config, adapter, live_steps, pairs_per_epoch, dim,
              window):
  """{row: callable running one round -> pairs/s}, input pipeline included."""
  from tpu_embeddings.artifacts import examples_io
  from tpu_embeddings.models.skipgram import SkipGramData
  from tpu_embeddings.models.skipgram_input import SkipGramBatches
  old = SkipGramData(corpus.tokens, corpus.counts, config)
  new = SkipGramBatches(old)
  fused_train = fused_on(adapter)
  stacked_train = fused_on(adapter, stacks=True)
  sentences = skipgram_corpus.read_text(corpus.text_file)

  def gensim_round():
    from gensim.models import Word2Vec
    model = Word2Vec(vector_size=dim, window=window, negative=NEGATIVES,
                     sg=1, min_count=1, sample=1e-3, workers=2, seed=0)
    model.build_vocab(sentences)
    clock = Clock()
    model.train(sentences, total_examples=len(sentences), epochs=1)
    return clock.rates(pairs_per_epoch)

  return {
      'live today: SkipGramData + TF step': live_round(
          lambda: old.batches(examples_io.token_dataset(
              corpus.examples_uri, 'train')).map(lambda f: (f, {})),
          adapter.train, live_steps),
      'live new: SkipGramBatches + fused op': live_round(
          lambda: new.batches(new.id_sequences([corpus.examples_uri],
                                               'train')), fused_train,
          live_steps),
      f'live new, stacks of {STACK}: + fused op': live_round(
          lambda: new.batches(new.id_sequences(
              [corpus.examples_uri], 'train')).batch(STACK), stacked_train,
          live_steps),
      'live new, later passes: ids in memory': live_round(
          lambda: new.batches(new.id_sequences([corpus.examples_uri],
                                               'train', cache=True)),
          fused_train, live_steps, math.ceil(pairs_per_epoch / BATCH) + 5),
      'gensim Word2Vec sg, 2 workers (1 epoch)': gensim_round,
  }


def run_preset(name, args, work):
  from tpu_embeddings.models.skipgram import SkipGramData
  from tpu_embeddings.models.skipgram_input import SkipGramBatches
  window, dim, lo, hi, tokens = PRESETS[name]
  tokens = args.tokens or tokens
  corpus = skipgram_corpus.write(os.path.join(work, name),
                                 skipgram_corpus.zipf_lines(tokens, lo, hi))
  config, _, adapter = trainer_parts(corpus, window, dim)
  pairs = SkipGramBatches(SkipGramData(
      corpus.tokens, corpus.counts, config)).pairs_per_epoch(
          [corpus.examples_uri], 'train')
  print(f'\n== {name}: window {window}, dim {dim}, lines of {lo}-{hi} '
        f'tokens, {corpus.total_tokens:,} tokens, {len(corpus.tokens):,} '
        f'distinct, {pairs:,.0f} pairs per epoch', flush=True)
  rows = step_rows(corpus, config, dim, adapter, args.steps)
  rows.update(live_rows(corpus, config, adapter, args.live_steps, pairs, dim,
                        window))
  rows.update(shared_row(corpus, config, adapter, args) if args.shared else {})
  rates = {row: [] for row in rows}
  for _ in range(args.rounds):
    for row, round_ in rows.items():
      rates[row].append(round_())
  report({row: (statistics.median(w for w, _ in r),
                statistics.median(c for _, c in r))
          for row, r in rates.items()})


def report(median):
  """One line per row: pairs/s (wall) and pairs per CPU-second (all of the
  process's threads; what a shared machine distorts least), with ratios."""
  keras = median['baseline: Keras, steps_per_execution']
  gensim = median['gensim Word2Vec sg, 2 workers (1 epoch)']
  print(f'{"run":<42} {"pairs/s":>10} {"x Keras":>7} {"x gensim":>8} '
        f'{"pairs/CPU-s":>11} {"x Keras":>7} {"x gensim":>8}')
  for row, (wall, cpu) in median.items():
    print(f'{row:<42} {wall:>10,.0f} {wall / keras[0]:>7.2f} '
          f'{wall / gensim[0]:>8.2f} {cpu:>11,.0f} {cpu / keras[1]:>7.2f} '
          f'{cpu / gensim[1]:>8.2f}')
  for row, (live, _) in median.items():
    if row.startswith(('live new', 'live shared')):
      print(f'{row.split(":")[0]}: target >= 1M pairs/s '
            f'{"met" if live >= 1e6 else "NOT met"}; >= 0.8x gensim '
            f'{"met" if live >= 0.8 * gensim[0] else "NOT met"} '
            f'({live / gensim[0]:.2f}x)')


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--presets', default='defaults,window50')
  parser.add_argument('--tokens', type=int, default=0,
                      help='corpus tokens (0: the preset\'s)')
  parser.add_argument('--steps', type=int, default=300,
                      help='steps per round, step alone')
  parser.add_argument('--live-steps', type=int, default=2000,
                      help='steps per round, live')
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--shared', type=int, default=16)  # 0: no such row
  parser.add_argument('--group', type=int, default=64)
  parser.add_argument('--work', help='keep the corpora here')
  args = parser.parse_args(argv)
  print(f'{os.cpu_count()} CPUs; load average before: '
        f'{" ".join(f"{x:.2f}" for x in os.getloadavg())}; batch {BATCH}, '
        f'{NEGATIVES} negatives, Adagrad; median of {args.rounds} rounds')
  with tempfile.TemporaryDirectory() as tmp:
    for name in args.presets.split(','):
      run_preset(name, args, args.work or tmp)
  print(f'load average after: '
        f'{" ".join(f"{x:.2f}" for x in os.getloadavg())}')


if __name__ == '__main__':
  np.seterr(all='ignore')
  main()
