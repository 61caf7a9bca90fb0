"""Validator restore memory: tables only (optimizer=None) vs tables + slots.

    python -m benchmarks.validator_restore_memory [--rows 500000] [--dim 32]
        [--optimizer adam] [--workdir DIR]

Writes a trainer Model artifact whose checkpoint is saved by `TPUEmbedding` in
CPU mode (TPU format, with the optimizer's slots), then restores it in two
fresh processes:

* baseline `with_slots`: `TPUEmbeddingForServing(feature_config, optimizer)`,
  which creates and restores every slot variable;
* `validator`: `tpu_embeddings.models.model_restore.restore` of the built-in
  module, i.e. `TPUEmbeddingForServing(feature_config, optimizer=None)`,
  what the validation (tpu_embeddings/validation) runs for every model.

For each: bytes of the variables the restore created and the growth of the
process's resident memory across the restore (variables stay resident), as
ratios to the table's bytes and to the baseline (target: validator restored
bytes = table bytes; RSS growth about 1 / (1 + number of slots) of the
baseline's).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from benchmarks import synthetic_model

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r'''
import json, os, sys
import tensorflow as tf
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import model_restore
from tpu_embeddings.models import module_files
from tpu_embeddings.models.context import ModelContext
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

def rss():
  with open('/proc/self/statm') as f:
    return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')

model_uri, mode = sys.argv[1], sys.argv[2]
spec = EmbeddingSpec.load(model_uri)
path = model_layout.latest_checkpoint(model_uri)
tf.constant(0)  # runtime initialised before measuring
before = rss()
if mode == 'validator':
  embedding = model_restore.restore(model_uri, module_files.builtin(),
                                    ModelContext()).embedding
else:
  embedding = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      spec.build_feature_config(), spec.build_optimizer())
  status = tf.train.Checkpoint(embedding=embedding).restore(path)
  embedding.build()
  status.assert_existing_objects_matched()
variables = [v for v in tf.train.TrackableView(embedding).descendants()
             if isinstance(v, tf.Variable)]
print(json.dumps({
    'variables': len(variables),
    'restored_bytes': sum(v.shape.num_elements() * v.dtype.size
                          for v in variables),
    'rss_growth': rss() - before}))
'''


def _measure(model_uri: str, mode: str):
  env = dict(os.environ, PYTHONPATH=_ROOT, TF_CPP_MIN_LOG_LEVEL='3',
             CUDA_VISIBLE_DEVICES='')
  out = subprocess.run([sys.executable, '-c', _CHILD, model_uri, mode],
                       check=True, capture_output=True, text=True, env=env,
                       cwd=_ROOT)
  return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--rows', type=int, default=500_000)
  parser.add_argument('--dim', type=int, default=32)
  parser.add_argument('--optimizer', default='adam',
                      choices=['sgd', 'adagrad', 'adam', 'ftrl'])
  parser.add_argument('--workdir', default='')
  args = parser.parse_args(argv)
  with tempfile.TemporaryDirectory(dir=args.workdir or None) as work:
    model_uri = os.path.join(work, 'model')
    synthetic_model.write_model(model_uri, args.rows, args.dim, args.optimizer)
    table_bytes = args.rows * args.dim * 4
    results = {mode: _measure(model_uri, mode)
               for mode in ('with_slots', 'validator')}
  base = results['with_slots']
  print(f'table {args.rows} x {args.dim} float32 = {table_bytes / 2**20:.1f} '
        f'MiB, optimizer {args.optimizer}; baseline = with_slots')
  print(f'{"restore":<12}{"variables":>10}{"restored MiB":>14}'
        f'{"/table":>8}{"/baseline":>11}{"RSS growth MiB":>17}{"/table":>8}'
        f'{"/baseline":>11}')
  for mode, r in results.items():
    print(f'{mode:<12}{r["variables"]:>10}'
          f'{r["restored_bytes"] / 2**20:>14.1f}'
          f'{r["restored_bytes"] / table_bytes:>8.2f}'
          f'{r["restored_bytes"] / base["restored_bytes"]:>11.2f}'
          f'{r["rss_growth"] / 2**20:>17.1f}'
          f'{r["rss_growth"] / table_bytes:>8.2f}'
          f'{r["rss_growth"] / max(base["rss_growth"], 1):>11.2f}')


if __name__ == '__main__':
  main()
