"""Submit and schedule a compiled pipeline on Kubeflow Pipelines with
kfp.Client.

    run = submit('http://localhost:8080', 'kubeflow/pipeline.yaml',
                 pipeline_root='gs://bucket/tfx')
    job = schedule('http://localhost:8080', 'kubeflow/pipeline.yaml',
                   cron='0 0 3 * * *', pipeline_root='gs://bucket/tfx')

The package is the YAML written by `python -m pipelines compile`. A YAML spec
carries no runtimeConfig, so the pipeline root always travels with the
request (default: the spec's `defaultPipelineRoot`). Every call to the API
server is bounded by `timeout` seconds: an unreachable or silent host is a
RuntimeError naming the host, never a hang.
"""

import contextlib
import dataclasses
import json
import re
import socket
import warnings
from typing import Any, Dict, Iterator, Optional

from pipelines.kubeflow import cron as cron_lib
from pipelines.kubeflow import flags as kubeflow_flags
from pipelines.kubeflow import package as kubeflow_package

DEFAULT_EXPERIMENT = kubeflow_flags.DEFAULT_EXPERIMENT
DEFAULT_TIMEOUT_SECONDS = kubeflow_flags.DEFAULT_TIMEOUT_SECONDS

@dataclasses.dataclass
class Submitted:
  """What the API server answered."""
  host: str
  experiment_id: str
  run_id: str = ''
  recurring_run_id: str = ''
  pipeline_root: str = ''

  @property
  def url(self) -> str:
    if self.recurring_run_id:
      return f'{self.host}/#/recurringruns/details/{self.recurring_run_id}'
    return f'{self.host}/#/runs/details/{self.run_id}'


def check_host(host: str) -> str:
  if not host or not re.match(r'^https?://[^/\s]+', host):
    raise ValueError(f'--host {host!r}: give the Kubeflow Pipelines API URL '
                     'with http:// or https://, e.g. http://localhost:8080')
  return host.rstrip('/')


class _TimeoutPool:
  """Wraps the generated client's urllib3 pool: kfp.Client never passes a
  timeout, so every request gets `timeout` seconds and one connection try."""

  def __init__(self, pool, timeout: float):
    self._pool = pool
    self._timeout = timeout

  def request(self, method, url, timeout=None, **kwargs):
    import urllib3
    kwargs.setdefault('retries', urllib3.Retry(
        total=None, connect=0, read=0, other=0, status=0, redirect=5))
    return self._pool.request(
        method, url, timeout=timeout or urllib3.Timeout(
            connect=self._timeout, read=self._timeout), **kwargs)

  def __getattr__(self, name):
    return getattr(self._pool, name)


def _client_class():
  """kfp.Client whose requests are bounded from the constructor's own health
  check on (the check is its first request)."""
  import kfp

  class BoundedClient(kfp.Client):
    """kfp.Client with a per-request timeout."""

    def __init__(self, timeout: float, **kwargs):
      self._request_timeout_s = timeout
      self.health_checked = False
      super().__init__(**kwargs)

    def get_kfp_healthz(self, sleep_duration: int = 0):
      """One bounded attempt (kfp.Client retries 5 times, 5 s apart); an
      error answer raises ApiException with the server's status."""
      del sleep_duration
      rest = self._healthz_api.api_client.rest_client
      if not isinstance(rest.pool_manager, _TimeoutPool):
        rest.pool_manager = _TimeoutPool(rest.pool_manager,
                                         self._request_timeout_s)
      healthz = self._healthz_api.get_healthz()
      self.health_checked = True
      return healthz

  return BoundedClient


@contextlib.contextmanager
def _translate_errors(host: str, timeout: float) -> Iterator[None]:
  """Turns API and transport failures into one line naming the host."""
  import kfp_server_api
  import urllib3
  try:
    yield
  except kfp_server_api.ApiException as e:
    reason = ' '.join((e.reason or '').split()) or 'error'
    if e.status == 0:  # transport failure wrapped by the generated client
      raise RuntimeError(f'cannot reach Kubeflow Pipelines at {host}: '
                         f'{reason}') from None
    raise RuntimeError(
        f'Kubeflow Pipelines at {host} answered HTTP {e.status} {reason}: '
        f'{_api_message(e)}check --host and access rights') from None
  except (urllib3.exceptions.HTTPError, OSError, TimeoutError) as e:
    raise RuntimeError(
        f'cannot reach Kubeflow Pipelines at {host} within {timeout:g} s '
        f'({_transport_reason(e)}); check --host, e.g. `kubectl port-forward '
        '-n kubeflow svc/ml-pipeline-ui 8080:80` then '
        '--host http://localhost:8080') from None


def _api_message(e) -> str:
  """The server's own message from a KFP error body ({"message": ...})."""
  body = getattr(e, 'body', None) or ''
  if isinstance(body, bytes):
    body = body.decode('utf-8', 'replace')
  try:
    parsed = json.loads(body)
  except ValueError:
    return ''
  if not isinstance(parsed, dict):
    return ''
  message = parsed.get('message') or parsed.get('error') or ''
  message = ' '.join(str(message).split())[:300]
  return f'{message}; ' if message else ''


def _transport_reason(e: BaseException) -> str:
  reason = getattr(e, 'reason', None) or e
  text = str(reason)
  if isinstance(reason, (socket.timeout, TimeoutError)) or 'timed out' in text:
    return 'timed out'
  if 'refused' in text.lower():
    return 'connection refused'
  return text.splitlines()[0][:200] if text else type(reason).__name__


def connect(host: str, timeout: float = DEFAULT_TIMEOUT_SECONDS,
            namespace: Optional[str] = None,
            existing_token: Optional[str] = None):
  """A kfp.Client for `host` whose health check answered within `timeout`."""
  host = check_host(host)
  if timeout <= 0:
    raise ValueError(f'--timeout must be > 0 seconds, got {timeout}')
  with _translate_errors(host, timeout), warnings.catch_warnings():
    warnings.filterwarnings('ignore', category=FutureWarning,
                            module=r'kfp\.client')
    client = _client_class()(timeout=timeout, host=host,
                             namespace=namespace or 'kubeflow',
                             existing_token=existing_token)
    if not client.health_checked:  # skipped when a namespace is set
      client.get_kfp_healthz()
  return client


def _prepare(host, package_path, pipeline_root, arguments, timeout, namespace,
             existing_token):
  """The checked package, root and arguments, then a connected client."""
  package, root, arguments = kubeflow_package.checked(
      package_path, pipeline_root, arguments)
  client = connect(host, timeout, namespace, existing_token)
  return package, root, arguments, client, check_host(host)


def submit(host: str,
           package_path: str,
           pipeline_root: Optional[str] = None,
           arguments: Optional[Dict[str, Any]] = None,
           run_name: Optional[str] = None,
           experiment: str = DEFAULT_EXPERIMENT,
           namespace: Optional[str] = None,
           enable_caching: Optional[bool] = None,
           service_account: Optional[str] = None,
           timeout: float = DEFAULT_TIMEOUT_SECONDS,
           existing_token: Optional[str] = None) -> Submitted:
  """Starts one run of the package (create_run_from_pipeline_package)."""
  package, root, arguments, client, host = _prepare(
      host, package_path, pipeline_root, arguments, timeout, namespace,
      existing_token)
  with _translate_errors(host, timeout):
    result = client.create_run_from_pipeline_package(
        package.path,
        arguments=arguments,
        run_name=run_name or package.pipeline_name,
        experiment_name=experiment,
        namespace=namespace,
        pipeline_root=root,
        enable_caching=enable_caching,
        service_account=service_account)
  return Submitted(host=host, experiment_id=result.run_info.experiment_id or '',
                   run_id=result.run_id or '', pipeline_root=root)


def schedule(host: str,
             package_path: str,
             cron: str,
             pipeline_root: Optional[str] = None,
             arguments: Optional[Dict[str, Any]] = None,
             name: Optional[str] = None,
             experiment: str = DEFAULT_EXPERIMENT,
             namespace: Optional[str] = None,
             max_concurrency: int = 1,
             catchup: bool = False,
             start_time: Optional[str] = None,
             service_account: Optional[str] = None,
             timeout: float = DEFAULT_TIMEOUT_SECONDS,
             existing_token: Optional[str] = None) -> Submitted:
  """Creates an enabled recurring run of the package (create_recurring_run).

  Each scheduled run reads the latest span, so the schedule is the
  retraining trigger on Kubeflow; `max_concurrency=1` keeps two runs from
  pushing at once and `catchup=False` skips missed intervals.
  """
  cron = cron_lib.validate_cron(cron)
  if max_concurrency < 1:
    raise ValueError(f'--max-concurrency must be >= 1, got {max_concurrency}')
  package, root, arguments, client, host = _prepare(
      host, package_path, pipeline_root, arguments, timeout, namespace,
      existing_token)
  job_name = name or f'{package.pipeline_name} ({cron})'
  with _translate_errors(host, timeout):
    exp = client.create_experiment(name=experiment, namespace=namespace)
    job = client.create_recurring_run(
        experiment_id=exp.experiment_id,
        job_name=job_name,
        description=f'{package.pipeline_name} on cron "{cron}": each run '
        'trains on the latest span',
        start_time=start_time,
        cron_expression=cron,
        max_concurrency=max_concurrency,
        no_catchup=not catchup,
        params=arguments,
        pipeline_package_path=package.path,
        enabled=True,
        pipeline_root=root,
        service_account=service_account)
  return Submitted(host=host, experiment_id=exp.experiment_id or '',
                   recurring_run_id=job.recurring_run_id or '',
                   pipeline_root=root)
