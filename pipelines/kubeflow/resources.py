"""CPU and memory of every Kubeflow task, sized from the pipeline config.

Each task's pod requests what it is limited to (request = limit for CPU and
memory), so Kubernetes schedules it only where it fits, gives it the
Guaranteed QoS class and never runs it inside a namespace's default limits.

Memory follows the table. With `rows` the vocabulary rows (the tables' own
`vocabulary_size`, else `vocabulary.max_tokens`, else ASSUMED_ROWS) and
`slots` the optimizer's slot variables (adagrad 1, adam 2, ...):

    weights = rows x dim x 4 bytes, every table   (what a model's tables hold)
    state   = weights x (1 + slots)               (what a checkpoint holds)

each task gets 1.5 x what it must hold, plus FIXED_GB:

    FileBasedExampleGen   2 CPU   4 GB
    Vocabulary            2 CPU   4 GB
    EmbeddingTrainer      8 CPU   2 GB + 1.5 x state        (CPU: tables and
                                  slots in host memory)
                                 16 GB + 2 x state           (TPU: the table is
                                  in HBM; the host holds the checkpoint it saves
                                  or restores)
    CheckpointValidator   4 CPU   2 GB + 1.5 x 2 x weights  (the candidate's
                                  tables and the pushed baseline's)
    EmbeddingExporter     4 CPU   2 GB + 1.5 x weights      (one copy at a
                                  time, its load checks included)
    EmbeddingPusher       1 CPU   2 GB                      (streams files)

`python -m benchmarks.table_scale` measured every CPU task's peak (its
process and the processes it starts) at 1M, 2M and 10M rows of two dim-64
Adagrad tables within 1.5 x what it holds + 1.1 GB, and prints each peak
beside this estimate (docs/benchmarks.md); its smoke test checks the estimate
against the peaks of a small table. The TPU trainer's host was not
measured.

Memory is rounded up to whole GB (10^9 bytes, Kubernetes' `G`). `compile
--cpu TASK=N --memory TASK=SIZE` overrides one task. Importable without
TensorFlow or TFX.
"""

import dataclasses
import math
import re
from typing import Dict, Iterable

from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

GB = 10**9
FLOAT_BYTES = 4
# Rows assumed per table when neither the spec nor vocabulary.max_tokens
# bounds the vocabulary.
ASSUMED_ROWS = 1_000_000
# A task's memory: HELD x the table bytes it must hold, plus FIXED_GB (its
# interpreter, libraries and working set: 0.5-1.2 GB measured).
HELD = 1.5
FIXED_GB = 2

EXAMPLE_GEN = 'FileBasedExampleGen'
VOCABULARY = 'Vocabulary'
TRAINER = 'EmbeddingTrainer'
VALIDATOR = 'CheckpointValidator'
EXPORTER = 'EmbeddingExporter'
PUSHER = 'EmbeddingPusher'
TASKS = (EXAMPLE_GEN, VOCABULARY, TRAINER, VALIDATOR, EXPORTER, PUSHER)

_MEMORY_UNITS = {'': GB, 'G': GB, 'Gi': 2**30, 'M': 10**6, 'Mi': 2**20,
                 'T': 10**12, 'Ti': 2**40}


@dataclasses.dataclass(frozen=True)
class TaskResources:
  """One task's pod: `cpu` cores and `memory_gb` GB, requested and limited."""
  cpu: float
  memory_gb: float

  def to_spec(self) -> Dict[str, float]:
    """The container's `resources` fields of the KFP PipelineSpec."""
    return {'cpuRequest': self.cpu, 'cpuLimit': self.cpu,
            'memoryRequest': self.memory_gb, 'memoryLimit': self.memory_gb}

  def __str__(self) -> str:
    return f'{self.cpu:g} CPU {self.memory_gb:g} GB'


@dataclasses.dataclass(frozen=True)
class TableSize:
  """Bytes of the trained tables and of a checkpoint of them."""
  rows: int
  weights_bytes: int
  state_bytes: int


def table_size(spec: EmbeddingSpec, max_tokens: int) -> TableSize:
  """The size of `spec`'s tables, rows bounded as the module docstring says."""
  rows = total = 0
  for table in spec.tables:
    table_rows = table.vocabulary_size or (
        max_tokens + 1 if max_tokens else ASSUMED_ROWS)
    rows += table_rows
    total += table_rows * table.dim * FLOAT_BYTES
  return TableSize(rows, total, total * (1 + len(spec.optimizer.slot_names)))


def _gb(nbytes: float) -> float:
  return float(math.ceil(nbytes / GB))


def estimate(config, tpu: bool) -> Dict[str, TaskResources]:
  """TaskResources per task for a `PipelineConfig`; `tpu`: trainer on TPU."""
  size = table_size(config.embedding_spec(), config.vocabulary.max_tokens)
  state, weights = size.state_bytes, size.weights_bytes
  fixed = FIXED_GB * GB
  trainer = (TaskResources(8, _gb(16 * GB + 2 * state)) if tpu else
             TaskResources(8, _gb(fixed + HELD * state)))
  return {
      EXAMPLE_GEN: TaskResources(2, 4.0),
      VOCABULARY: TaskResources(2, 4.0),
      TRAINER: trainer,
      VALIDATOR: TaskResources(4, _gb(fixed + HELD * 2 * weights)),
      EXPORTER: TaskResources(4, _gb(fixed + HELD * weights)),
      PUSHER: TaskResources(1, float(FIXED_GB)),
  }


def _task_value(flag: str, item: str):
  task, sep, raw = item.partition('=')
  if not sep or not raw:
    raise ValueError(f'{flag} {item!r}: expected TASK=VALUE, e.g. '
                     f'{flag} {EXPORTER}='
                     + ('4' if flag == '--cpu' else '32G'))
  if task not in TASKS:
    raise ValueError(f'{flag} {item!r}: unknown task {task!r}; tasks are '
                     f'{", ".join(TASKS)}')
  return task, raw


def parse_cpu(item: str):
  """('EmbeddingTrainer', 16.0) from 'EmbeddingTrainer=16'."""
  task, raw = _task_value('--cpu', item)
  try:
    cpu = float(raw[:-1]) / 1000 if raw.endswith('m') else float(raw)
  except ValueError:
    cpu = float('nan')
  if not math.isfinite(cpu) or cpu <= 0:
    raise ValueError(f'--cpu {item!r}: expected cores > 0, e.g. 4 or 500m')
  return task, cpu


def parse_memory(item: str):
  """('EmbeddingExporter', 32.0) from 'EmbeddingExporter=32G' (GB)."""
  task, raw = _task_value('--memory', item)
  m = re.fullmatch(r'(\d+(?:\.\d+)?)(Gi|G|Mi|M|Ti|T)?', raw)
  if not m or float(m.group(1)) <= 0:
    raise ValueError(f'--memory {item!r}: expected a size > 0 such as 32G, '
                     '32Gi or 512M (a plain number is GB)')
  return task, round(float(m.group(1)) * _MEMORY_UNITS[m.group(2) or ''] / GB,
                     3)


def with_overrides(resources: Dict[str, TaskResources],
                   cpu: Iterable[str] = (),
                   memory: Iterable[str] = ()) -> Dict[str, TaskResources]:
  """`resources` with `--cpu TASK=N` / `--memory TASK=SIZE` items applied."""
  out = dict(resources)
  for item in cpu:
    task, value = parse_cpu(item)
    out[task] = dataclasses.replace(out[task], cpu=value)
  for item in memory:
    task, value = parse_memory(item)
    out[task] = dataclasses.replace(out[task], memory_gb=value)
  return out
