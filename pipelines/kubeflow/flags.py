"""The `compile` command's cluster flags, checked without TensorFlow or TFX.

`compile` checks every flag here before importing the compiler, so a typo
costs a fraction of a second and writes nothing.
"""

import dataclasses
import os
import re
from typing import Any, Dict, List, Optional

from pipelines.kubeflow import credentials

TPU_RESOURCE = 'google.com/tpu'
# Defaults of `submit` and `schedule`.
DEFAULT_EXPERIMENT = 'tpu-embeddings'
DEFAULT_TIMEOUT_SECONDS = 10.0
GKE_TPU_ACCELERATOR_LABEL = 'cloud.google.com/gke-tpu-accelerator'
GKE_TPU_TOPOLOGY_LABEL = 'cloud.google.com/gke-tpu-topology'
# A root the cluster's pods reach: a URI with a scheme (gs://, s3://,
# hdfs://, ...) other than file://.
_REMOTE_ROOT = re.compile(r'(?!file://)[A-Za-z][A-Za-z0-9+.-]*://', re.I)


@dataclasses.dataclass(frozen=True)
class TpuRequest:
  """A GKE TPU slice for the trainer's pod.

  accelerator: GKE accelerator label, e.g. tpu-v5-lite-podslice,
    tpu-v4-podslice.
  topology: chip topology of the slice, e.g. 2x2 or 2x2x1.
  count: `google.com/tpu` chips requested (default: chips in the topology).
  """
  accelerator: str
  topology: str
  count: int

  @classmethod
  def parse(cls, accelerator: Optional[str], topology: Optional[str],
            count: Optional[int] = None) -> Optional['TpuRequest']:
    """None when no TPU is asked for; a one-line error for bad flags."""
    if not accelerator and not topology and count is None:
      return None
    if not accelerator:
      raise ValueError('--tpu-topology/--tpu-count need --tpu-accelerator, '
                       'e.g. --tpu-accelerator tpu-v5-lite-podslice')
    if not re.fullmatch(r'tpu-[a-z0-9][a-z0-9-]*', accelerator):
      raise ValueError(
          f'--tpu-accelerator {accelerator!r}: expected a GKE TPU accelerator '
          'label such as tpu-v5-lite-podslice or tpu-v4-podslice')
    if not topology:
      raise ValueError(f'--tpu-accelerator {accelerator} needs --tpu-topology '
                       '(GKE schedules TPU pods by both labels), e.g. 2x2')
    if not re.fullmatch(r'[1-9]\d*(x[1-9]\d*){1,2}', topology):
      raise ValueError(f'--tpu-topology {topology!r}: expected chips per '
                       'dimension such as 2x2 or 2x2x1')
    chips = 1
    for d in topology.split('x'):
      chips *= int(d)
    if count is None:
      count = chips
    if count < 1:
      raise ValueError(f'--tpu-count must be >= 1, got {count}')
    if count > chips:
      raise ValueError(f'--tpu-count {count} exceeds the {chips} chips of '
                       f'topology {topology}')
    return cls(accelerator, topology, count)

  def kubernetes_executor(self) -> Dict[str, Any]:
    """The trainer's Kubernetes platform config: the TPU node pool's node
    selectors and a toleration of its taint."""
    return {
        'nodeSelector': {'labels': {
            GKE_TPU_ACCELERATOR_LABEL: self.accelerator,
            GKE_TPU_TOPOLOGY_LABEL: self.topology,
        }},
        'tolerations': [{'key': TPU_RESOURCE, 'operator': 'Exists',
                         'effect': 'NoSchedule'}],
    }


def check_uri(flag: str, value: str) -> str:
  """`value` without a trailing slash; one line naming `flag` if unusable
  (a URL with a password is: it would be compiled into the package)."""
  if not value or value != value.strip() or any(c.isspace() for c in value):
    raise ValueError(f'{flag} {value!r}: give a URI without spaces, e.g. '
                     'gs://bucket/path')
  credentials.check_uri(flag, value)
  return value.rstrip('/') if len(value) > 1 else value


def local_root_warnings(roots: Dict[str, str]) -> List[str]:
  """One line for each of `roots` (flag -> value) that is a path on this
  machine's disk, which the pods that run the package cannot see."""
  return [f'warning: {flag} {value} is a local path: the pods cannot see '
          'this machine\'s disk; give a root they can reach, e.g. '
          'gs://bucket/path' for flag, value in roots.items()
          if not _REMOTE_ROOT.match(value)]


def check_image(image: str) -> str:
  if not image or not re.fullmatch(r'[A-Za-z0-9][^\s]*', image):
    raise ValueError(f'--image {image!r}: give the component image, e.g. '
                     'us-docker.pkg.dev/PROJECT/REPO/tpu-embeddings:TAG '
                     '(built from kubeflow/Dockerfile)')
  return image


def check_output(output: str) -> str:
  """The directory `output` will be written into (it must exist)."""
  if not output.endswith(('.yaml', '.yml')):
    raise ValueError(f'--output {output}: kfp.Client takes a .yaml package; '
                     'name the file *.yaml')
  out_dir = os.path.dirname(os.path.abspath(output))
  if not os.path.isdir(out_dir):
    raise FileNotFoundError(f'--output {output}: directory {out_dir} does not '
                            'exist')
  return out_dir
