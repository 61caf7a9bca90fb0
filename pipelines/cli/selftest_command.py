"""`selftest`: does the TPU trainer agree with the CPU trainer here?

    python -m pipelines selftest [--tpu auto|NAME] [--steps 50]
        [--module-file F] [--set FIELD=VALUE ...] [--perturb row]

Steps the TPU adapter and the CPU adapter (without a reachable TPU: the
CPU adapter's two implementations) through the same synthetic batches, each
step from one state, compares their tables, slots, dense variables and
losses after every step and prints a table (tpu_embeddings/training/
selftest; docs/tpu_selftest.md). Exit 0 when they agree, 1 when they differ
(the line names the first variable and step), 2 for a bad argument or a
named TPU that cannot be reached.
"""

import argparse
import tempfile

from pipelines.cli import arguments
from tpu_embeddings.core import import_gc
from tpu_embeddings.training.selftest import options

EXIT_DIFFER = 1


def _positive(text: str) -> int:
  try:
    value = int(text)
  except ValueError:
    value = 0
  if value < 1:
    raise argparse.ArgumentTypeError(f'expected an integer >= 1, got {text!r}')
  return value


def register(sub):
  p = sub.add_parser(
      'selftest', help='train a few steps on the TPU and on the CPU from the '
      'same start and compare checkpoints and losses (no TPU: the CPU '
      'trainer\'s two implementations); exit 0 agree, 1 differ')
  p.add_argument('--tpu', default='auto',
                 help='"auto" (default: a TPU when the environment names '
                 'one), a TPU name, or "" to compare the CPU implementations')
  p.add_argument('--steps', type=_positive, default=options.DEFAULT_STEPS,
                 help='steps each trainer takes (default '
                 f'{options.DEFAULT_STEPS})')
  p.add_argument('--vocabulary-size', type=_positive,
                 default=options.DEFAULT_VOCABULARY_SIZE, metavar='N',
                 help='tokens of each synthetic vocabulary (default '
                 f'{options.DEFAULT_VOCABULARY_SIZE})')
  p.add_argument('--module-file', default='',
                 help='the model\'s module file (default: skip-gram)')
  p.add_argument('--config',
                 help='JSON file of settings, e.g. {"trainer": {"dim": 64}}')
  p.add_argument('--set', action='append', default=[], metavar='NAME=VALUE',
                 help='override one setting (JSON value), e.g. '
                 '--set trainer.batch_size=1024')
  p.add_argument('--perturb', choices=options.PERTURBATIONS,
                 help='alter the reference on purpose (row 0 of the first '
                 'table or of its first slot, or one step\'s learning rate) '
                 'to see what a failing self-test reports')
  p.add_argument('--workdir',
                 help='where the checkpoints go (default: a temporary '
                 'directory, removed at the end)')
  p.set_defaults(func=run_selftest)


def _load(args):
  """(module, TrainerConfig) of the arguments, checked."""
  config = arguments.config_from_args(argparse.Namespace(
      module_file=args.module_file, config=args.config, set=args.set,
      tpu=None))
  # TensorFlow (the self-test's and the module's), imported with the garbage
  # collector paused (`import_gc`).
  with import_gc.paused():
    from pipelines import model_settings
    from tpu_embeddings.models import module_files
    from tpu_embeddings.training.selftest import runner  # noqa: F401
  if args.module_file:
    config = model_settings.for_module(config, args.module_file)
    return model_settings.load(args.module_file), config.trainer
  return module_files.builtin(), config.trainer_config()


def run_selftest(args) -> int:
  module, settings = _load(args)
  from tpu_embeddings.training.selftest import runner
  with tempfile.TemporaryDirectory(prefix='tpu-embeddings-selftest-') as tmp:
    result = runner.run(module, settings, tpu=args.tpu, steps=args.steps,
                        workdir=args.workdir or tmp,
                        vocabulary_size=args.vocabulary_size,
                        perturb=args.perturb or '')
  print('\n'.join(result.lines), flush=True)
  return 0 if result.agrees else EXIT_DIFFER


# -- compile --selftest: the self-test as a one-task Kubeflow pipeline.

SELFTEST_OUTPUT = 'kubeflow/selftest.yaml'


def add_compile_arguments(p):
  """`compile`'s options for the self-test pipeline."""
  p.add_argument('--selftest', action='store_true',
                 help='compile a one-task pipeline that runs `selftest` on '
                 'the trainer\'s TPU node pool instead of the pipeline '
                 '(--set settings, --module-file and --selftest-steps go to '
                 'it)')
  p.add_argument('--selftest-steps', type=_positive,
                 default=options.DEFAULT_STEPS, metavar='N',
                 help='steps of the compiled self-test (default '
                 f'{options.DEFAULT_STEPS})')


def run_compile_selftest(args, tpu, task_resources,
                         pipeline_output: str) -> int:
  """Writes the self-test package; its task is sized as the trainer's. An
  --output left at the pipeline's default (`pipeline_output`) becomes
  SELFTEST_OUTPUT: the self-test never overwrites the pipeline package."""
  if args.config:
    raise ValueError('--config with --selftest: give the settings as --set '
                     'NAME=VALUE (they are passed to the self-test)')
  from pipelines.kubeflow import resources as kubeflow_resources
  from pipelines.kubeflow import selftest_pipeline
  resources = task_resources[kubeflow_resources.TRAINER]
  output = SELFTEST_OUTPUT if args.output == pipeline_output else args.output
  path = selftest_pipeline.compile_selftest(
      output, image=args.image, pipeline_root=args.pipeline_root, tpu=tpu,
      resources=resources, steps=args.selftest_steps, settings=args.set,
      module_file=args.module_file)
  where = (f'{tpu.count} google.com/tpu chip(s) ({tpu.accelerator}, '
           f'{tpu.topology})' if tpu else 'CPU')
  print(f'wrote {path}: one task, `selftest --steps {args.selftest_steps}` '
        f'on {where}, {resources}; image {args.image}')
  return 0
