"""Serving SavedModel `lookup` throughput vs a NumPy gather of the same rows.

    python -m benchmarks.lookup_throughput [--rows 1000000] [--dim 64]
        [--tokens-per-call 4096] [--rounds 7]

Candidate: the exported SavedModel (`tf.saved_model.load`, signature `lookup`)
called with 4096 token strings per call: vocabulary hash lookup, OOV masking
and the row gather, result fetched as a NumPy array with `np.asarray` (which
shares the tensor's buffer; `.numpy()` would add a copy of the result that
the baseline does not make). Baseline: `np.take` of the
same rows with the ids already known (the memory-bound limit: no string
hashing, no TF dispatch). Both see the same Zipf-distributed batches; rounds
alternate so that load from other processes hits both alike; the table reports
the median round. Target: ratio >= 0.3.

For reference, the table also reports a signature that takes the same tokens
and returns only their count: the cost of calling a loaded signature from
Python at all, an upper bound for the ratio of any signature.
"""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import tensorflow as tf

from benchmarks import synthetic_model
from components import checkpoint_restore
from components.exporter import serving_export


def _call_only_signature(export_dir: str):
  """A loaded signature that takes the same tokens and only returns their
  count: what calling a signature from Python costs before any lookup."""
  module = tf.Module()
  module.size = tf.function(
      lambda tokens: {'size': tf.size(tokens)},
      input_signature=[tf.TensorSpec([None], tf.string, name='tokens')])
  tf.saved_model.save(module, export_dir,
                      signatures={'size': module.size.get_concrete_function()})
  return tf.saved_model.load(export_dir).signatures['size']


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--rows', type=int, default=1_000_000)
  parser.add_argument('--dim', type=int, default=64)
  parser.add_argument('--tokens-per-call', type=int, default=4096)
  parser.add_argument('--calls-per-round', type=int, default=200)
  parser.add_argument('--rounds', type=int, default=7)
  args = parser.parse_args()

  with tempfile.TemporaryDirectory(prefix='lookup-bench-') as work:
    model_uri = os.path.join(work, 'model')
    synthetic_model.write_model(model_uri, args.rows, args.dim)
    restored = checkpoint_restore.restore_for_serving(model_uri)
    table = restored.table_numpy('tokens')
    export_dir = os.path.join(work, 'serving')
    serving_export.export_serving_model(restored, export_dir)
    del restored
    lookup = tf.saved_model.load(export_dir).signatures['lookup']
    call_only = _call_only_signature(os.path.join(work, 'call-only'))

    rng = np.random.default_rng(0)
    ranks = np.arange(1, args.rows + 1, dtype=np.float64)
    p = (1.0 / ranks) / np.sum(1.0 / ranks)
    batches = 16
    ids = rng.choice(args.rows, size=(batches, args.tokens_per_call), p=p)
    tokens = [tf.constant([f't{i}' for i in row]) for row in ids]
    # Same rows both ways.
    np.testing.assert_allclose(lookup(tokens=tokens[0])['embeddings'].numpy(),
                               np.take(table, ids[0], axis=0), atol=1e-6)

    def run_candidate():
      start = time.perf_counter()
      for c in range(args.calls_per_round):
        np.asarray(lookup(tokens=tokens[c % batches])['embeddings'])
      return time.perf_counter() - start

    def run_baseline():
      start = time.perf_counter()
      for c in range(args.calls_per_round):
        np.take(table, ids[c % batches], axis=0)
      return time.perf_counter() - start

    def run_call_only():
      start = time.perf_counter()
      for c in range(args.calls_per_round):
        np.asarray(call_only(tokens=tokens[c % batches])['size'])
      return time.perf_counter() - start

    run_candidate(), run_baseline(), run_call_only()  # warm up
    candidate, baseline, floor = [], [], []
    for _ in range(args.rounds):
      candidate.append(run_candidate())
      baseline.append(run_baseline())
      floor.append(run_call_only())

  n = args.calls_per_round * args.tokens_per_call
  cand_rate = n / statistics.median(candidate)
  base_rate = n / statistics.median(baseline)
  print(f'\ntable {args.rows} x {args.dim} float32, {args.tokens_per_call} '
        f'tokens per call, median of {args.rounds} rounds of '
        f'{args.calls_per_round} calls')
  print(f'{"":36} {"tokens/s":>12} {"ratio":>7} target')
  print(f'{"baseline: NumPy gather (np.take)":36} {base_rate:12.3e} '
        f'{1.0:7.2f}')
  print(f'{"SavedModel lookup signature":36} {cand_rate:12.3e} '
        f'{cand_rate / base_rate:7.2f} >= 0.3')
  floor_rate = n / statistics.median(floor)
  print(f'{"(info) signature call, no lookup":36} {floor_rate:12.3e} '
        f'{floor_rate / base_rate:7.2f} upper bound of any signature')


if __name__ == '__main__':
  main()
