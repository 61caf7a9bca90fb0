"""`compile`: the pipeline as a KFP v2 YAML package for Kubeflow Pipelines.

Every flag and setting is checked before TFX is imported.
"""

from pipelines.kubeflow import flags as kubeflow_flags
from pipelines.kubeflow import resources as kubeflow_resources
from pipelines.cli.commands import run as run_command

DEFAULT_OUTPUT = 'kubeflow/pipeline.yaml'


def register(sub):
  p = sub.add_parser('compile',
                     help='compile the pipeline for Kubeflow (KFP v2 YAML)')
  p.add_argument('--output', default=DEFAULT_OUTPUT,
                 help=f'YAML package to write (default {DEFAULT_OUTPUT})')
  p.add_argument('--image', required=True,
                 help='component image built from kubeflow/Dockerfile')
  p.add_argument('--pipeline-root', required=True,
                 help='root of the artifacts on the cluster, e.g. '
                 'gs://bucket/tfx')
  p.add_argument('--data-root',
                 help='corpus root with span-N/ folders: the default of the '
                 'data_root run parameter (default PIPELINE_ROOT/data)')
  p.add_argument('--push-root',
                 help='where blessed versions are pushed: the default of the '
                 'push_root run parameter (default PIPELINE_ROOT/pushed)')
  p.add_argument('--tpu-accelerator', metavar='TYPE',
                 help='GKE TPU accelerator of the trainer\'s node pool, e.g. '
                 'tpu-v5-lite-podslice (default: train on CPU)')
  p.add_argument('--tpu-topology', metavar='TOPO',
                 help='TPU slice topology, e.g. 2x2')
  p.add_argument('--tpu-count', type=int, metavar='N',
                 help='google.com/tpu chips requested (default: chips in '
                 'the topology)')
  p.add_argument('--config', help='JSON file of settings, e.g. {"trainer": {"window": 5}}')
  p.add_argument('--set', action='append', default=[], metavar='FIELD=VALUE',
                 help='override one setting (JSON value), e.g. --set trainer.train_steps=2000')
  p.add_argument('--beam-arg', action='append', default=[],
                 help='Beam pipeline argument for the Beam components')
  p.add_argument('--cpu', action='append', default=[], metavar='TASK=N',
                 help='cores one task requests and is limited to, instead of '
                 'the estimate, e.g. --cpu EmbeddingTrainer=16')
  p.add_argument('--memory', action='append', default=[],
                 metavar='TASK=SIZE',
                 help='memory one task requests and is limited to, instead '
                 'of the estimate from the table size, e.g. '
                 '--memory EmbeddingExporter=32G')
  p.set_defaults(func=run, tpu=None)


def run(args) -> int:
  tpu = kubeflow_flags.TpuRequest.parse(
      args.tpu_accelerator, args.tpu_topology, args.tpu_count)
  config = run_command.config_from_args(args)
  if config.trainer.tpu:
    raise ValueError('--set tpu=...: the compiled trainer\'s tpu follows '
                     '--tpu-accelerator ("auto" with a TPU, "" without)')
  kubeflow_flags.check_output(args.output)
  kubeflow_flags.check_image(args.image)
  root = kubeflow_flags.check_uri('--pipeline-root', args.pipeline_root)
  data_root = kubeflow_flags.check_uri('--data-root',
                                       args.data_root or f'{root}/data')
  push_root = kubeflow_flags.check_uri('--push-root',
                                       args.push_root or f'{root}/pushed')
  task_resources = kubeflow_resources.with_overrides(
      kubeflow_resources.estimate(config, tpu is not None), args.cpu,
      args.memory)
  from pipelines.kubeflow import compile as kubeflow_compile  # pylint: disable=g-import-not-at-top
  compiled = kubeflow_compile.compile_pipeline(
      args.output, image=args.image, pipeline_root=args.pipeline_root,
      data_root=data_root, push_root=push_root, config=config, tpu=tpu,
      beam_pipeline_args=args.beam_arg or None, task_resources=task_resources)
  where = (f'{compiled.trainer_task} on {tpu.count} google.com/tpu chip(s) '
           f'({tpu.accelerator}, {tpu.topology}), other tasks on CPU'
           if tpu else 'all tasks on CPU')
  print(f'wrote {compiled.path}: {len(compiled.tasks)} tasks, image '
        f'{compiled.image}; {where}; data {data_root}, push {push_root}, '
        f'pipeline root {args.pipeline_root}')
  print('requests = limits: ' + ', '.join(
      f'{task} {r}' for task, r in compiled.resources.items()))
  print('run-time parameters: ' + ', '.join(compiled.parameters))
  return 0
