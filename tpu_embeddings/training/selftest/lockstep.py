"""The two trainers stepped in lockstep, each step from one state.

Step by step, on the same batch: each trainer takes one step (its
`train(iterator, 1, step)`, the learning rate of that global step), both
states are written and compared, and the candidate is set to the
reference's state before the next step. Each step is then compared from
the same state: a difference is that step's own, not rounding compounded
over earlier steps (a model with Adam or batch-coupled losses turns one
rounding step of its tables into a difference of percents within fifty free
steps, so free-running trainers part even when both are right).

The last step's states are written as `run` writes its checkpoint and read
back as the validator reads it (checkpoint_values.py); the earlier ones are
read from the checkpoint files directly.

The adapters are driven through their public input and step only,
`iterator(input_fn)` and `train(iterator, steps, first_step)`: `_batches`
is the one place that changes if the adapters' input does.
"""

import dataclasses
import os
from typing import Dict, List

import tensorflow as tf

from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
from tpu_embeddings.training.selftest import checkpoint_values
from tpu_embeddings.training.selftest import compare


@dataclasses.dataclass
class Lockstep:
  """Each variable's worst difference (and its step); each step's loss."""
  variables: Dict[str, compare.Difference]
  candidate_losses: List[float]
  reference_losses: List[float]

  def verdict(self) -> compare.Verdict:
    return compare.Verdict(
        list(self.variables.values()),
        compare.step_losses(self.candidate_losses, self.reference_losses))


def _ratio(d: compare.Difference) -> float:
  return d.max_abs / d.tolerance


def _keep_worst(found: Dict[str, compare.Difference],
                differences: List[compare.Difference]):
  """Keeps per name the first failing difference, else the largest."""
  for d in differences:
    kept = found.get(d.name)
    if kept is None or kept.agrees and (
        not d.agrees or _ratio(d) > _ratio(kept)):
      found[d.name] = d


def _remove(prefix: str):
  for path in tf.io.gfile.glob(prefix + '*'):
    tf.io.gfile.remove(path)


def _batches(adapter, dataset: tf.data.Dataset):
  """The adapter's iterator over `dataset`'s global batches: the self-test
  runs on one host, so its one input pipeline reads them all."""
  return adapter.iterator(lambda _: dataset)


def _one_step(adapter, iterator, step: int) -> float:
  return float(adapter.train(iterator, 1, step)[0])


def run(reference, candidate, dataset: tf.data.Dataset, steps: int,
        spec: EmbeddingSpec, workdir: str) -> Lockstep:
  """`steps` lockstep steps of two built trainers that start alike."""
  reference_batches = _batches(reference, dataset)
  candidate_batches = _batches(candidate, dataset)
  result = Lockstep({}, [], [])
  for step in range(steps):
    result.reference_losses.append(
        _one_step(reference, reference_batches, step))
    result.candidate_losses.append(
        _one_step(candidate, candidate_batches, step))
    if step == steps - 1:
      values = {}
      for name, adapter in (('candidate', candidate),
                            ('reference', reference)):
        uri = os.path.join(workdir, name)
        values[name] = checkpoint_values.read(
            spec, uri, checkpoint_values.save(adapter, spec, uri, steps))
    else:
      prefix = os.path.join(workdir, 'steps', f'{step}')
      paths = {name: checkpoint_values.write_initial(
          adapter, f'{prefix}-{name}') for name, adapter in (
              ('candidate', candidate), ('reference', reference))}
      values = {name: checkpoint_values.read_raw(spec, path)
                for name, path in paths.items()}
      checkpoint_values.start_from(candidate, paths['reference'])
      _remove(prefix)
    _keep_worst(result.variables, compare.variables(
        values['candidate'], values['reference'], step))
  return result
