"""Whether two float32 trainers can agree at all at the given settings.

Some settings amplify rounding: at a high constant learning rate (Adagrad's
first update moves a row by about the learning rate, whatever its
gradient) a difference of one rounding step grows step after step, and two
correct trainers part as far as a wrong one would. When the trainers
differ, the reference is trained once more from its own start with its
tables moved by one float32 rounding step (NUDGE, relative); if that alone
exceeds the tolerance, the difference says nothing about the trainers and
the verdict says so.
"""

import os

from tpu_embeddings.training.selftest import checkpoint_values
from tpu_embeddings.training.selftest import compare
from tpu_embeddings.training.selftest import trainers

# One float32 rounding step, relative to a value.
NUDGE = 2.0 ** -23


def nudge_tables(adapter):
  """Moves every table of a built CPU adapter by NUDGE of its values."""
  for variables in adapter.variables.values():
    table = variables['parameters']
    table.assign(table * (1.0 + NUDGE))


def verdict(make, decay, start: str, dataset, spec, steps: int, workdir: str,
            reference_values, reference_losses) -> compare.Verdict:
  """The reference against itself from a nudged start (`start`: its
  initial checkpoint; `make(decay)` builds another reference)."""
  nudged = make(decay)
  nudged.build(dataset.element_spec)
  checkpoint_values.start_from(nudged, start)
  nudge_tables(nudged)
  losses = trainers.train(nudged, dataset, steps)
  uri = os.path.join(workdir, 'nudged')
  values = checkpoint_values.read(
      spec, uri, checkpoint_values.save(nudged, spec, uri, steps))
  return compare.Verdict(
      [compare.difference(name, values[name], value)
       for name, value in reference_values.items()],
      compare.step_losses(losses, reference_losses))
