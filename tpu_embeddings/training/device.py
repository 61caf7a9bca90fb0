"""Which device trains: the `tpu` parameter resolved, and the TPU connection.

    tpu=""        CPU.
    tpu="auto"    a TPU when the environment names one (TPU_NAME,
                  KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS or TPU_CONFIG), else CPU;
                  the choice and its reason are logged.
    tpu=<name>    that TPU (a Cloud TPU name, "local", or grpc://host:port).
                  If it cannot be reached, training fails with an error that
                  names it; it never falls back to CPU silently. A grpc://
                  address is first asked what it is in a child process
                  (`tpu_probe`), so one that answers but is not a TPU worker
                  is one error line, not an abort inside TF's gRPC client.
"""

import dataclasses
import os
from typing import Mapping, Optional
from urllib import parse

from absl import logging

from tpu_embeddings.training import tpu_probe

AUTO = 'auto'
# The variables TPUClusterResolver() reads when no name is given.
TPU_ENVIRONMENT_VARIABLES = ('TPU_NAME', 'KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS',
                             'TPU_CONFIG')


@dataclasses.dataclass(frozen=True)
class DeviceChoice:
  """kind 'cpu' or 'tpu'; `tpu` is passed to TPUClusterResolver (None = env)."""
  kind: str
  tpu: Optional[str]
  reason: str

  @property
  def description(self) -> str:
    if self.kind == 'cpu':
      return f'CPU ({self.reason})'
    return f'TPU {self.tpu or "from the environment"} ({self.reason})'


def choose(tpu: str, environ: Optional[Mapping[str, str]] = None
          ) -> DeviceChoice:
  """Resolves the `tpu` parameter; logs the choice."""
  environ = os.environ if environ is None else environ
  if not isinstance(tpu, str):
    raise ValueError(f'tpu must be a string ("", "auto" or a TPU name), got '
                     f'{tpu!r}')
  tpu = tpu.strip()
  if not tpu:
    choice = DeviceChoice('cpu', None, 'tpu=""')
  elif tpu == AUTO:
    named = [v for v in TPU_ENVIRONMENT_VARIABLES if environ.get(v)]
    if named:
      choice = DeviceChoice('tpu', None,
                            f'tpu="auto" and {named[0]} is set')
    else:
      choice = DeviceChoice(
          'cpu', None, 'tpu="auto" and none of '
          f'{", ".join(TPU_ENVIRONMENT_VARIABLES)} is set')
  else:
    choice = DeviceChoice('tpu', tpu, f'tpu="{tpu}"')
  logging.info('EmbeddingTrainer device: %s', choice.description)
  return choice


def _probe_grpc(address: str, label: str):
  """Fails with one line, before TF's client touches it, unless it is a TPU.

  TF's client hangs on an address that never answers and aborts the process
  on one that answers something else; the probe runs in a child process.
  """
  for endpoint in address.split(','):
    hostport = parse.urlparse(endpoint.strip()).netloc or endpoint.strip()
    seen = tpu_probe.probe(hostport)
    if seen.error and 'Connection refused' in seen.error:
      raise RuntimeError(
          f'TPU {label} cannot be reached: {hostport} (connection refused); '
          'fix the tpu parameter, or set tpu="" to train on CPU')
    if seen.error:
      raise RuntimeError(
          f'TPU {label}: {hostport} is not a TPU ({seen.error}); fix the tpu '
          'parameter, or set tpu="" to train on CPU')
    if seen.device_types and not any(
        t.startswith('TPU') for t in seen.device_types):
      raise RuntimeError(
          f'TPU {label}: {hostport} is a TensorFlow worker with no TPU device '
          f'(devices: {", ".join(seen.device_types)}); fix the tpu parameter, '
          'or set tpu="" to train on CPU')


def check_single_host(strategy, label: str):
  """Refuses a TPU whose chips span several hosts: the adapter feeds every
  replica from batches this one client builds (multi-host input, each host
  reading its share, is not implemented)."""
  hosts = strategy.extended.num_hosts
  if hosts > 1:
    raise RuntimeError(
        f'TPU {label} spans {hosts} hosts; only single-host TPUs are '
        'supported (e.g. v5e 2x4, v4-8): fix the tpu parameter, or set '
        'tpu="" to train on CPU')


def connect(choice: DeviceChoice):
  """TPUClusterResolver -> connect -> initialize -> TPUStrategy.

  Raises RuntimeError naming the TPU when it cannot be reached.
  """
  import tensorflow as tf
  if choice.kind != 'tpu':
    raise ValueError(f'connect() needs a TPU choice, got {choice}')
  label = repr(choice.tpu) if choice.tpu else (
      'named by ' + ', '.join(v for v in TPU_ENVIRONMENT_VARIABLES
                              if os.environ.get(v)))
  try:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        tpu=choice.tpu)
    master = resolver.master()
  except Exception as e:
    raise RuntimeError(
        f'TPU {label} cannot be resolved ({type(e).__name__}: '
        f'{str(e).splitlines()[0] if str(e) else ""}); fix the tpu parameter, '
        'or set tpu="" to train on CPU') from e
  if master.startswith('grpc://'):
    _probe_grpc(master, label)
  try:
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.TPUStrategy(resolver)
  except Exception as e:
    raise RuntimeError(
        f'TPU {label} could not be initialized ({type(e).__name__}: '
        f'{str(e).splitlines()[0] if str(e) else ""}); fix the tpu parameter, '
        'or set tpu="" to train on CPU') from e
  if not tf.config.list_logical_devices('TPU'):
    raise RuntimeError(f'TPU {label}: connected but no TPU device is visible; '
                       'set tpu="" to train on CPU')
  check_single_host(strategy, label)
  logging.info('EmbeddingTrainer connected to TPU %s: %d replicas', label,
               strategy.num_replicas_in_sync)
  return strategy
