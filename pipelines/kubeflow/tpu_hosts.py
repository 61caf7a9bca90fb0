"""How many hosts a GKE TPU slice spans; the trainer takes one host only.

The TPU adapter feeds every replica from batches one client builds, and a
Kubeflow task is one pod on one node: a slice whose chips sit on several
hosts (v5e 4x4, v4 2x2x2 = v4-16, ...) would need one trainer process per
host, each reading its share of the input through an input context, and
one checkpoint writer. That is not implemented, so `compile` refuses such
a topology in one line rather than compiling a trainer that cannot run.

Chips per host, from GKE's TPU node pools: v5e and v6e machines hold up to
8 chips on one host (1x1, 2x2 and 2x4 single-host slices), their multi-host
slices 4 per host; v3, v4 and v5p hosts hold 4 chips (v4's 2x2x1).
"""

import dataclasses
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Generation:
  """`single_host`: the most chips a one-host slice has; `per_host`: the
  chips of each host of a multi-host slice."""
  name: str
  single_host: int
  per_host: int


# GKE accelerator label (cloud.google.com/gke-tpu-accelerator) -> generation.
GENERATIONS = {
    'tpu-v3-device': Generation('v3', 4, 4),
    'tpu-v3-slice': Generation('v3', 4, 4),
    'tpu-v4-podslice': Generation('v4', 4, 4),
    'tpu-v5-lite-device': Generation('v5e', 8, 4),
    'tpu-v5-lite-podslice': Generation('v5e', 8, 4),
    'tpu-v5p-slice': Generation('v5p', 4, 4),
    'tpu-v6e-slice': Generation('v6e', 8, 4),
}


def chips(topology: str) -> int:
  """Chips of a topology such as 2x4 or 2x2x1."""
  count = 1
  for d in topology.split('x'):
    count *= int(d)
  return count


def hosts(accelerator: str, topology: str) -> int:
  """Hosts a slice of `topology` on `accelerator` spans (ValueError naming
  --tpu-accelerator when the label is not in GENERATIONS)."""
  generation = GENERATIONS.get(accelerator)
  if generation is None:
    raise ValueError(
        f'--tpu-accelerator {accelerator}: unknown TPU generation, so its '
        'hosts cannot be counted (the trainer runs on one host); use one of '
        f'{", ".join(sorted(GENERATIONS))}')
  n = chips(topology)
  if n <= generation.single_host:
    return 1
  return -(-n // generation.per_host)


def check_single_host(tpu) -> Optional[int]:
  """Refuses, in one line naming --tpu-topology, a TpuRequest whose slice
  spans more than one host; the host count (None without a TPU)."""
  if tpu is None:
    return None
  n = hosts(tpu.accelerator, tpu.topology)
  if n > 1:
    generation = GENERATIONS[tpu.accelerator]
    raise ValueError(
        f'--tpu-topology {tpu.topology}: a {generation.name} slice of '
        f'{chips(tpu.topology)} chips spans {n} hosts; only single-host '
        f'slices are supported (at most {generation.single_host} '
        f'{generation.name} chips, e.g. '
        f'{"2x4" if generation.single_host == 8 else "2x2x1"}): the trainer '
        'feeds the TPU from one pod')
  return n
