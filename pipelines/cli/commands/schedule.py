"""`schedule`: a recurring run of the compiled pipeline on Kubeflow Pipelines.

Each scheduled run reads the latest span, so the schedule is the retraining
trigger on Kubeflow.
"""

from pipelines.kubeflow import cron
from pipelines.kubeflow import client as kubeflow_client
from pipelines.cli.commands import submit


def register(sub):
  p = sub.add_parser('schedule',
                     help='run the compiled pipeline on a cron schedule')
  submit.add_client_arguments(p)
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
  p.set_defaults(func=run)


def run(args) -> int:
  cron.validate_cron(args.cron)
  scheduled = kubeflow_client.schedule(
      args.host, args.package, args.cron, pipeline_root=args.pipeline_root,
      arguments=submit.parse_params(args.param), name=args.name,
      experiment=args.experiment, namespace=args.namespace,
      max_concurrency=args.max_concurrency, catchup=args.catchup,
      start_time=args.start_time, service_account=args.service_account,
      timeout=args.timeout)
  print(f'scheduled recurring run {scheduled.recurring_run_id} on cron '
        f'"{cron.validate_cron(args.cron)}" (experiment '
        f'{scheduled.experiment_id}, pipeline root {scheduled.pipeline_root})'
        f': {scheduled.url}')
  return 0
