"""`submit`: start one run of the compiled pipeline on Kubeflow Pipelines."""

from pipelines.kubeflow import client as kubeflow_client

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
  p.add_argument('--experiment', default=kubeflow_client.DEFAULT_EXPERIMENT,
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
                 default=kubeflow_client.DEFAULT_TIMEOUT_SECONDS,
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


def register(sub):
  p = sub.add_parser('submit',
                     help='run the compiled pipeline once on Kubeflow')
  add_client_arguments(p)
  p.add_argument('--run-name', help='display name of the run')
  p.set_defaults(func=run)


def run(args) -> int:
  submitted = kubeflow_client.submit(
      args.host, args.package, pipeline_root=args.pipeline_root,
      arguments=parse_params(args.param), run_name=args.run_name,
      experiment=args.experiment, namespace=args.namespace,
      service_account=args.service_account, timeout=args.timeout)
  print(f'submitted run {submitted.run_id} (experiment '
        f'{submitted.experiment_id}, pipeline root {submitted.pipeline_root})'
        f': {submitted.url}')
  return 0
