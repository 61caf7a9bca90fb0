"""Every component's seconds and peak memory on tables of millions of rows.

    python -m benchmarks.table_scale [--sizes 1,2,10] [--work DIR]
        [--train-steps 200] [--train-tokens 2000000] [--queries 20]
        [--no-trainer-above 2]

For each size (millions of vocabulary rows, the pipeline's defaults: two
tables of dim 64 and Adagrad) it writes a `benchmarks.topic_corpus`
Vocabulary of that many tokens and Examples drawn from it (train:
`--train-tokens`, eval: 100k tokens), then runs, each in a fresh process
under the pipeline's malloc setting (tpu_embeddings/core/huge_pages.py):

  trainer        the EmbeddingTrainer's `train`, `--train-steps` steps, on
                 those inputs (sizes above `--no-trainer-above` millions
                 skip it: at 10M rows its tables and slots alone are 10 GiB)
  validator      CheckpointValidator's executor on a synthetic trained Model
                 of that vocabulary (`synthetic_model.write_topic_model`,
                 TPU checkpoint format with slots, blessed by the default
                 gates), no pushed version yet
  exporter       EmbeddingExporter's executor: serving SavedModel, Hub
                 module, load checks in their own processes
  pusher         EmbeddingPusher's executor: publishes version 1
  validator+base the validator again, now against pushed version 1
  pushed --verify, embed, neighbors
                 the CLI (`python -m pipelines ... --push-root`)
  saved_model_cli
                 `saved_model_cli run` of the `neighbors` signature on the
                 pushed SavedModel (a session load, as TF Serving's)
  neighbors/query
                 latency of one call of the pushed `neighbors` signature
                 with one token (`tf.saved_model.load`, median of
                 `--queries` calls after a warm-up call): a brute-force
                 scan of every row

A component's process imports TFX's Kubeflow V2 executor entrypoint first,
as a pod's container does (about 0.8 GiB with TensorFlow, before any
work). Peak memory is the largest sum of resident memory over the process and
every process it starts (a pod's limit counts them all; the exporter's load
checks run beside it), or the process's own `ru_maxrss` if larger
(benchmarks/process_memory.py). Seconds are wall seconds of the whole
process, imports included, as a pod runs them.

With `--home`, every component but the trainer runs on the newest
artifacts of a finished `python -m pipelines run` instead (a trained
Model), pushing into a push root of its own.

`state` is what the component must hold: the trainer every table and its
optimizer slots; the validator every table of the candidate, and the
baseline's served table when one is pushed; the exporter the exported
table; a consumer of the served SavedModel its table and row norms; the
pusher and `pushed --verify` nothing (they stream files). The bound (issue
41): peak <= 1.5 x state + 1 GB; the table prints peak / state and the
part of the peak above 1.5 x state, which must stay under 1 GB (0.93 GiB),
and the memory `compile` gives the component's Kubeflow pod
(pipelines/kubeflow/resources.py) with the peak's share of it.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Dict, List

from benchmarks import process_memory
from benchmarks import synthetic_model
from benchmarks import topic_corpus
from pipelines.kubeflow import resources

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 2**30
FIXED_BYTES = 10**9       # the bound's working set that does not scale
STATE_FACTOR = 1.5
DIM = 64
EVAL_TOKENS = 100_000
SLOTS = 1                 # Adagrad's accumulator
TABLES = 2                # tokens and contexts


# -- children: one component each, in a fresh process -----------------------
def _artifact(cls, uri: str, **custom):
  a = cls()
  a.uri = uri
  for key, value in custom.items():
    a.set_int_custom_property(key, value)
  return a


def _child_trainer(work: str, steps: str):
  from components.trainer import executor
  from pipelines import config as config_lib
  from tests.support.artifact_fixtures import SpanlessExamples
  config = config_lib.PipelineConfig.from_dict({
      'trainer.train_steps': int(steps),
      'trainer.warm_start_from_pushed': False,
      'trainer.projector_tokens': 0}).trainer_config()
  out = os.path.join(work, 'trained')
  shutil.rmtree(out, ignore_errors=True)
  executor.train(executor.TrainerArgs(
      [SpanlessExamples(os.path.join(work, 'examples'))],
      os.path.join(work, 'vocabulary'), os.path.join(out, 'model'),
      os.path.join(out, 'run')), config)


def _child_validator(work: str, push_root: str, out: str):
  from tfx.types import standard_artifacts

  from components import artifact_types
  from components import keys
  from components.validator import executor
  examples = _artifact(standard_artifacts.Examples,
                       os.path.join(work, 'examples'))
  examples.split_names = '["train", "eval"]'
  blessing = _artifact(standard_artifacts.ModelBlessing, out)
  os.makedirs(out, exist_ok=True)
  executor.Executor().Do(
      {keys.MODEL: [_artifact(standard_artifacts.Model,
                              os.path.join(work, 'model'))],
       keys.EXAMPLES: [examples],
       keys.VOCABULARY: [_artifact(artifact_types.Vocabulary,
                                   os.path.join(work, 'vocabulary'))]},
      {keys.BLESSING: [blessing]},
      {'config': '{}', 'push_root': push_root})


def _child_exporter(work: str):
  from tfx.types import standard_artifacts

  from components import keys
  from components.exporter import executor
  executor.Executor().Do(
      {keys.MODEL: [_artifact(standard_artifacts.Model,
                              os.path.join(work, 'model'))]},
      {keys.SERVING_MODEL: [_artifact(standard_artifacts.Model,
                                      os.path.join(work, 'serving'))],
       keys.HUB_MODULE: [_artifact(standard_artifacts.Model,
                                   os.path.join(work, 'hub'))]},
      {})


def _child_pusher(work: str, push_root: str):
  from tfx.types import standard_artifacts

  from components import keys
  from components.pusher import executor
  pushed = {k: _artifact(standard_artifacts.PushedModel,
                         os.path.join(work, f'pushed-{k}'))
            for k in ('serving', 'hub')}
  executor.Executor().Do(
      {keys.SERVING_MODEL: [_artifact(standard_artifacts.Model,
                                      os.path.join(work, 'serving'))],
       keys.HUB_MODULE: [_artifact(standard_artifacts.Model,
                                   os.path.join(work, 'hub'))],
       keys.MODEL_BLESSING: [_artifact(standard_artifacts.ModelBlessing,
                                       os.path.join(work, 'blessing'),
                                       blessed=1)]},
      {keys.PUSHED_SERVING: [pushed['serving']],
       keys.PUSHED_HUB: [pushed['hub']]},
      {keys.PUSH_ROOT: push_root})


def _child_latency(serving_dir: str, token: str, queries: str):
  import tensorflow as tf

  from tpu_embeddings.artifacts import serving_contract
  neighbors = tf.saved_model.load(serving_dir).signatures[
      serving_contract.NEIGHBORS]
  args = {serving_contract.TOKENS: tf.constant([token]),
          serving_contract.K: tf.constant(10)}
  neighbors(**args)  # warm-up
  times = []
  for _ in range(int(queries)):
    start = time.perf_counter()
    neighbors(**args)[serving_contract.SCORES].numpy()
    times.append(time.perf_counter() - start)
  print(json.dumps({'median': statistics.median(times)}))


def _child_write(work: str, rows: str, train_tokens: str):
  rows, train_tokens = int(rows), int(train_tokens)
  topic_corpus.write_vocabulary(os.path.join(work, 'vocabulary'), rows,
                                train_tokens)
  topic_corpus.write_examples(os.path.join(work, 'examples'), rows,
                              {'train': train_tokens, 'eval': EVAL_TOKENS})
  synthetic_model.write_topic_model(os.path.join(work, 'model'),
                                    os.path.join(work, 'vocabulary'), DIM)


_CHILDREN = {'write': _child_write, 'trainer': _child_trainer,
             'validator': _child_validator, 'exporter': _child_exporter,
             'pusher': _child_pusher, 'latency': _child_latency}


# -- the driver ----------------------------------------------------------------
def _env(task: str = ''):
  """The environment of a process: the CLI's malloc setting, and a Kubeflow
  task's own variables (pipelines/kubeflow/spec_edits.py) for `task`."""
  from pipelines.kubeflow import spec_edits
  from tpu_embeddings.core import huge_pages
  env = huge_pages.environ(os.environ)
  env.update(spec_edits.TASK_ENV.get(task, {}))
  env['PYTHONPATH'] = ROOT
  env['TF_CPP_MIN_LOG_LEVEL'] = '2'
  return env


def measure(argv: List[str], task: str = '') -> process_memory.Measured:
  """`argv` in a fresh process; exits with its stderr's tail if it fails."""
  found = process_memory.run(argv, env=_env(task), cwd=ROOT)
  if found.returncode != 0:
    sys.exit(f'{" ".join(argv[:6])} ... failed ({found.returncode}):\n'
             f'{found.stderr[-3000:]}')
  return found


# Children that run a component, and its Kubeflow task.
_TASKS = {'trainer': resources.TRAINER, 'validator': resources.VALIDATOR,
          'exporter': resources.EXPORTER, 'pusher': resources.PUSHER}


def child(*args: str) -> process_memory.Measured:
  return measure([sys.executable, '-m', 'benchmarks.table_scale', '--child',
                  *args], task=_TASKS.get(args[0], ''))


def cli(*args: str) -> process_memory.Measured:
  return measure([sys.executable, '-m', 'pipelines', *args])


def write_inputs(work: str, rows: int, train_tokens: int):
  """Vocabulary, Examples and the synthetic trained Model of one size, in a
  child process: this one stays small (a child's ru_maxrss starts from the
  resident memory of the process that forked it)."""
  child('write', work, str(rows), str(train_tokens))


def link_home(home: str, work: str) -> int:
  """`work/` pointing at the newest Examples, Vocabulary and trained Model
  of a pipeline home, as `write_inputs` lays a size out; its rows."""
  from benchmarks.time_to_quality import newest
  from tpu_embeddings.artifacts import vocabulary_file
  shutil.rmtree(work, ignore_errors=True)
  os.makedirs(work)
  for name, node, channel in (
      ('examples', 'FileBasedExampleGen', 'examples'),
      ('vocabulary', 'Vocabulary', 'vocabulary'),
      ('model', 'EmbeddingTrainer', 'model')):
    os.symlink(newest(home, node, channel), os.path.join(work, name))
  return vocabulary_file.count_lines(vocabulary_file.path_of(
      os.path.join(work, 'vocabulary')))


def _blessed(report_dir: str) -> bool:
  with open(os.path.join(report_dir, 'report.json')) as f:
    report = json.load(f)
  if not report['blessed']:
    sys.exit(f'the synthetic model was not blessed: {report["summary"]}')
  return True


def run_size(work: str, rows: int, args) -> Dict[str, object]:
  """Every component on `rows` rows; {name: Measured}, states, latency."""
  weights = rows * DIM * 4
  served = weights + rows * 4
  push_root = os.path.join(work, 'pushed')
  shutil.rmtree(push_root, ignore_errors=True)
  for name in ('blessing', 'blessing-2', 'serving', 'hub', 'pushed-serving',
               'pushed-hub'):
    shutil.rmtree(os.path.join(work, name), ignore_errors=True)
  found: Dict[str, process_memory.Measured] = {}
  states: Dict[str, int] = {}
  if rows <= args.no_trainer_above * 1e6:
    found['trainer'] = child('trainer', work, str(args.train_steps))
    states['trainer'] = TABLES * weights * (1 + SLOTS)
  found['validator'] = child('validator', work, '',
                             os.path.join(work, 'blessing'))
  states['validator'] = TABLES * weights
  _blessed(os.path.join(work, 'blessing'))
  found['exporter'] = child('exporter', work)
  states['exporter'] = weights
  found['pusher'] = child('pusher', work, push_root)
  states['pusher'] = 0
  found['validator+base'] = child('validator', work, push_root,
                                  os.path.join(work, 'blessing-2'))
  states['validator+base'] = TABLES * weights + weights
  found['pushed --verify'] = cli('pushed', '--push-root', push_root,
                                 '--verify')
  states['pushed --verify'] = 0
  found['embed'] = cli('embed', '--push-root', push_root,
                       't0-0 t1-0 t0-5 unknown')
  states['embed'] = served
  found['neighbors'] = cli('neighbors', '--push-root', push_root, 't0-0')
  states['neighbors'] = served
  serving_dir = os.path.join(push_root, 'serving', '1')
  found['saved_model_cli'] = measure([
      os.path.join(os.path.dirname(sys.executable), 'saved_model_cli'), 'run',
      '--dir', serving_dir, '--tag_set', 'serve', '--signature_def',
      'neighbors', '--input_exprs', 'tokens=["t0-0"];k=10'])
  states['saved_model_cli'] = served
  latency = child('latency', serving_dir, 't0-0', str(args.queries))
  found['neighbors/query'] = latency
  states['neighbors/query'] = served
  return {'found': found, 'states': states,
          'latency': json.loads(latency.stdout.strip().splitlines()[-1])[
              'median']}


def pod_bytes(rows: int) -> Dict[str, int]:
  """The memory `compile` gives each component's Kubeflow pod (CPU
  trainer) for a vocabulary of `rows` and the default table settings."""
  from pipelines import config as config_lib
  config = config_lib.PipelineConfig.from_dict(
      {'vocabulary.max_tokens': rows - 1})  # and the out-of-vocabulary row
  found = resources.estimate(config, tpu=False)
  return {name: int(found[task].memory_gb * resources.GB)
          for name, task in (('validator+base', resources.VALIDATOR),
                             *_TASKS.items())}


def report(results: Dict[int, Dict[str, object]]):
  print(f'\n{"rows":>6} {"component":<16} {"seconds":>8} {"peak GiB":>9} '
        f'{"state GiB":>10} {"peak/state":>11} {"above 1.5x":>11} '
        f'{"pod GB":>7} {"peak/pod":>9} {"bound":>6}')
  worst = True
  for rows, result in results.items():
    pods = pod_bytes(rows)
    for name, m in result['found'].items():
      state = result['states'][name]
      above = m.peak_bytes - STATE_FACTOR * state
      ok = above <= FIXED_BYTES
      worst &= ok
      ratio = f'{m.peak_bytes / state:11.2f}' if state else f'{"-":>11}'
      pod = (f'{pods[name] / 1e9:7.0f} {m.peak_bytes / pods[name]:9.2f}'
             if name in pods else f'{"-":>7} {"-":>9}')
      print(f'{rows / 1e6:>5g}M {name:<16} {m.seconds:>8.1f} '
            f'{m.peak_bytes / GIB:>9.2f} {state / GIB:>10.2f} {ratio} '
            f'{above / GIB:>10.2f}G {pod} {"ok" if ok else "OVER":>6}')
  print(f'\n{"rows":>6} {"neighbors ms/query":>19}  (one token, k=10, '
        'brute force over every row)')
  for rows, result in results.items():
    print(f'{rows / 1e6:>5g}M {result["latency"] * 1e3:>19.1f}')
  print('bound: peak <= 1.5 x state + 1 GB (the "above 1.5x" column <= '
        f'{FIXED_BYTES / GIB:.2f} GiB): '
        + ('met by every component' if worst else 'NOT met'))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--sizes', default='1,2,10',
                      help='millions of vocabulary rows')
  parser.add_argument('--work', help='keep inputs and outputs here (reused '
                      'by a later run with the same sizes)')
  parser.add_argument('--train-steps', type=int, default=200)
  parser.add_argument('--train-tokens', type=int, default=2_000_000)
  parser.add_argument('--queries', type=int, default=20)
  parser.add_argument('--no-trainer-above', type=float, default=2,
                      help='millions of rows above which the trainer is not '
                      'run')
  parser.add_argument('--home', help='instead, every component but the '
                      'trainer on the newest artifacts of a finished `python '
                      '-m pipelines run` in this pipeline home')
  parser.add_argument('--child', nargs='+', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.child:
    if args.child[0] in _TASKS:
      # What a Kubeflow pod's container imports before the executor runs.
      from pipelines.kubeflow import container
      container.import_entrypoint(
          f'components.{args.child[0]}.executor.Executor')
    _CHILDREN[args.child[0]](*args.child[1:])
    return
  # Built in a child: this process stays without TensorFlow (write_inputs).
  print(measure([sys.executable, '-c', 'from benchmarks import kernels_ready; '
                 'kernels_ready.build_first()']).stdout.strip(), flush=True)
  print(f'{os.cpu_count()} CPUs; load average '
        f'{" ".join(f"{x:.2f}" for x in os.getloadavg())}; dim {DIM}, '
        f'{TABLES} tables, Adagrad; trainer {args.train_steps} steps',
        flush=True)
  results = {}
  with tempfile.TemporaryDirectory() as tmp:
    if args.home:
      work = os.path.join(args.work or tmp, 'home')
      rows = link_home(args.home, work)
      args.no_trainer_above = 0
      results[rows] = run_size(work, rows, args)
      report(results)
      return
    for size in [float(s) for s in args.sizes.split(',')]:
      rows = int(size * 1e6)
      work = os.path.join(args.work or tmp, f'{size:g}M')
      if not os.path.exists(os.path.join(work, 'model', 'metadata.json')):
        shutil.rmtree(work, ignore_errors=True)
        start = time.perf_counter()
        write_inputs(work, rows, args.train_tokens)
        print(f'{size:g}M rows: inputs written in '
              f'{time.perf_counter() - start:.0f} s', flush=True)
      results[rows] = run_size(work, rows, args)
      for name, m in results[rows]['found'].items():
        print(f'{size:g}M {name}: {m.seconds:.1f} s, peak '
              f'{m.peak_bytes / GIB:.2f} GiB', flush=True)
      if not args.work:
        shutil.rmtree(work)
  report(results)


if __name__ == '__main__':
  main()
