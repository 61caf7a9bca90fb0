"""Commands for Kubeflow Pipelines: compile, submit, schedule.

Every flag and setting is checked before TFX is imported.
"""

import os
import sys

from pipelines.cli import arguments
from pipelines.cli import home_settings
from pipelines.cli import selftest_command
from pipelines.kubeflow import credentials
from pipelines.kubeflow import cron
from pipelines.kubeflow import flags as kubeflow_flags
from pipelines.kubeflow import resources as kubeflow_resources
from pipelines.kubeflow import tpu_hosts
from tpu_embeddings.core import import_gc


def register(sub):
  _register_compile(sub)
  _register_submit(sub)
  _register_schedule(sub)


# -- compile: the pipeline as a KFP v2 YAML package for Kubeflow Pipelines.

DEFAULT_OUTPUT = 'kubeflow/pipeline.yaml'


def _register_compile(sub):
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
  p.add_argument('--module-file', default='',
                 help='the model\'s module file (default: skip-gram); '
                 'packaged as a wheel under --pipeline-root, as TFX packages '
                 'its Trainer\'s module file')
  p.add_argument('--home',
                 help='a local pipeline home whose recorded module file, '
                 'data format and settings (home.json) are reused; '
                 '--module-file, --config and --set given here win')
  p.add_argument('--config', help='JSON file of settings, e.g. '
                 '{"trainer": {"window": 5}}')
  p.add_argument('--set', action='append', default=[], metavar='FIELD=VALUE',
                 help='override one setting (JSON value), e.g. '
                 '--set trainer.train_steps=2000')
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
  selftest_command.add_compile_arguments(p)
  p.set_defaults(func=run_compile, tpu=None)


def run_compile(args) -> int:
  tpu = kubeflow_flags.TpuRequest.parse(
      args.tpu_accelerator, args.tpu_topology, args.tpu_count)
  tpu_hosts.check_single_host(tpu)
  if args.home and (args.selftest or not os.path.isdir(args.home)):
    raise ValueError(f'--home {args.home}: ' + (
        'compile --selftest reads no home; give --module-file and --set'
        if args.selftest else 'no such directory'))
  resolved = home_settings.resolve(args, 'compile')
  config = resolved.config
  credentials.check_compiled(args.beam_arg, config)
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
  if args.selftest:
    arguments.check_model(config, resolved.module_file)
    code = selftest_command.run_compile_selftest(args, tpu, task_resources,
                                                 DEFAULT_OUTPUT)
    _warn_local_roots({'--pipeline-root': root})
    return code
  # TFX, kfp and TensorFlow (which the model check needs too), imported
  # with the garbage collector paused (`import_gc`).
  with import_gc.paused():
    from pipelines.kubeflow import compile as kubeflow_compile
  arguments.check_model(config, resolved.module_file)
  compiled = kubeflow_compile.compile_pipeline(
      args.output, image=args.image, pipeline_root=args.pipeline_root,
      data_root=data_root, push_root=push_root, config=config, tpu=tpu,
      beam_pipeline_args=args.beam_arg or None, task_resources=task_resources,
      module_file=resolved.module_file)
  where = (f'{compiled.trainer_task} on {tpu.count} google.com/tpu chip(s) '
           f'({tpu.accelerator}, {tpu.topology}), other tasks on CPU'
           if tpu else 'all tasks on CPU')
  print(f'wrote {compiled.path}: {len(compiled.tasks)} tasks, image '
        f'{compiled.image}; {where}; data {data_root}, push {push_root}, '
        f'pipeline root {args.pipeline_root}')
  print('requests = limits: ' + ', '.join(
      f'{task} {r}' for task, r in compiled.resources.items()))
  print('run-time parameters: ' + ', '.join(compiled.parameters))
  _warn_local_roots({'--pipeline-root': root, '--data-root': data_root,
                     '--push-root': push_root})
  return 0


def _warn_local_roots(roots):
  """After the package is written: a line on stderr for each local root."""
  for line in kubeflow_flags.local_root_warnings(roots):
    print(line, file=sys.stderr, flush=True)


# -- submit: start one run of the compiled pipeline on Kubeflow Pipelines.

DEFAULT_PACKAGE = 'kubeflow/pipeline.yaml'


def add_client_arguments(p):
  """Arguments shared by `submit` and `schedule`."""
  p.add_argument('--host', required=True,
                 help='Kubeflow Pipelines API URL, e.g. http://localhost:8080')
  p.add_argument('--package', default=DEFAULT_PACKAGE,
                 help=f'compiled pipeline YAML (default {DEFAULT_PACKAGE})')
  p.add_argument('--pipeline-root',
                 help='root of the run\'s artifacts, e.g. gs://bucket/tfx '
                 '(default: the root the package was compiled with)')
  p.add_argument('--experiment', default=kubeflow_flags.DEFAULT_EXPERIMENT,
                 help='experiment name (created when missing)')
  p.add_argument('--namespace',
                 help='Kubernetes namespace (multi-user deployments)')
  p.add_argument('--service-account', help='Kubernetes service account')
  p.add_argument('--param', action='append', default=[],
                 metavar='NAME=VALUE',
                 help='set a pipeline parameter for the run, checked against '
                 'the package: data_root=gs://..., push_root=gs://..., or '
                 'a component config (JSON object merged over the compiled '
                 'one, or one field), e.g. trainer_config.train_steps=20000; '
                 'see kubeflow/README.md')
  p.add_argument('--timeout', type=float,
                 default=kubeflow_flags.DEFAULT_TIMEOUT_SECONDS,
                 help='seconds to wait for each API request')


def parse_params(items):
  """{NAME: raw string}; the package's parameter types convert them."""
  params = {}
  for item in items:
    name, sep, raw = item.partition('=')
    if not sep or not name:
      raise ValueError(f'--param {item!r}: expected NAME=VALUE')
    params[name] = raw
  return params


def _register_submit(sub):
  p = sub.add_parser('submit',
                     help='run the compiled pipeline once on Kubeflow')
  add_client_arguments(p)
  p.add_argument('--run-name', help='display name of the run')
  p.set_defaults(func=run_submit)


def run_submit(args) -> int:
  from pipelines.kubeflow import client as kubeflow_client
  submitted = kubeflow_client.submit(
      args.host, args.package, pipeline_root=args.pipeline_root,
      arguments=parse_params(args.param), run_name=args.run_name,
      experiment=args.experiment, namespace=args.namespace,
      service_account=args.service_account, timeout=args.timeout)
  print(f'submitted run {submitted.run_id} (experiment '
        f'{submitted.experiment_id}, pipeline root {submitted.pipeline_root})'
        f': {submitted.url}')
  return 0


# -- schedule: a recurring run of the compiled pipeline on Kubeflow Pipelines.

def _register_schedule(sub):
  p = sub.add_parser('schedule',
                     help='run the compiled pipeline on a cron schedule')
  add_client_arguments(p)
  p.add_argument('--cron', required=True,
                 help='6 fields, seconds first: "0 0 3 * * *" = 03:00 daily')
  p.add_argument('--name', help='display name of the recurring run')
  p.add_argument('--max-concurrency', type=int, default=1,
                 help='runs allowed at once (default 1)')
  p.add_argument('--catchup', action='store_true',
                 help='also start the runs missed while paused')
  p.add_argument('--start-time',
                 help='RFC 3339 time of the first run, e.g. '
                 '2027-01-01T00:00:00Z')
  p.set_defaults(func=run_schedule)


def run_schedule(args) -> int:
  cron.validate_cron(args.cron)
  from pipelines.kubeflow import client as kubeflow_client
  scheduled = kubeflow_client.schedule(
      args.host, args.package, args.cron, pipeline_root=args.pipeline_root,
      arguments=parse_params(args.param), name=args.name,
      experiment=args.experiment, namespace=args.namespace,
      max_concurrency=args.max_concurrency, catchup=args.catchup,
      start_time=args.start_time, service_account=args.service_account,
      timeout=args.timeout)
  print(f'scheduled recurring run {scheduled.recurring_run_id} on cron '
        f'"{cron.validate_cron(args.cron)}" (experiment '
        f'{scheduled.experiment_id}, pipeline root {scheduled.pipeline_root})'
        f': {scheduled.url}')
  return 0
