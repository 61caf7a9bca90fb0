"""Every check of the model contract, on a tiny untrained instance.

Run once as a command starts (`run`, `retrain`, `compile`), before any
component: what the trainer, the validator and the exporter would refuse
only after training is refused here, in one line naming the module file as
its user gave it.

    spec      embedding_spec(ctx) on synthetic vocabularies of a few tokens
              each (`selftest.synthetic`): its features in FEATURES, its
              tables' vocabularies (each table sized by its synthetic one:
              the trainer checks a fixed size against the real one), an
              optimizer TF builds;
    exports   exported_table(spec) as the exporter reads it; without one,
              the serving model the validator and the exporter build
              (model_restore, serving_model): model_fn, every signature
              traced and called on sample raw inputs (`serving_default`
              required, `examples` generated from it), the signatures as
              SavedModel signatures (a `neighbors` one as the `neighbors`
              command calls it), and the Hub call (HUB).

A module that reads its own input (input_fn, no FEATURES) has no
vocabularies to make up: its spec is checked by the trainer (the built-in
skip-gram is one).
"""

import dataclasses
import tempfile
from typing import Tuple

from tpu_embeddings.artifacts import serving_contract
from tpu_embeddings.artifacts.vocabulary_file import VocabularyError
from tpu_embeddings.models import exported_table
from tpu_embeddings.models import model_restore
from tpu_embeddings.models import spec_vocabularies
from tpu_embeddings.models.model_module import ModelModule
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.spec.checks import SpecError
from tpu_embeddings.training import model_inputs
from tpu_embeddings.training.selftest import synthetic

# Tokens of each synthetic vocabulary: enough for sample inputs (two tokens,
# one, none) and a table of a few rows.
VOCABULARY_SIZE = 4
# Embedding optimizers whose step is divided by an accumulator of squared
# gradients started at `initial_accumulator_value`.
_ACCUMULATING = ('adagrad', 'ftrl')


@dataclasses.dataclass(frozen=True)
class Checked:
  """What a check found: the signatures it built, and warnings (one line
  each) of what holds but will likely train badly."""
  signatures: Tuple[str, ...] = ()
  warnings: Tuple[str, ...] = ()


def check(module: ModelModule, settings) -> Checked:
  """Raises ModelModuleError (a broken contract) or UserCodeError (the
  module's code raised), naming the module file; `settings`: the
  TrainerConfig the trainer will be given."""
  if not module.features and module.input_fn is not None:
    return Checked()
  ctx = synthetic.context(module, settings, VOCABULARY_SIZE)
  spec = module.embedding_spec(ctx)
  model_inputs.check_spec_features(module, spec, sorted(module.features))
  try:
    # A table's size is checked against its real vocabulary by the trainer;
    # here every table is sized by its synthetic one.
    for table in spec.tables:
      spec = spec.with_vocabulary_size(table.name, 0)
    spec = spec_vocabularies.resolve(spec, module.features, ctx.vocabularies)
    spec.build_optimizer()
  except (SpecError, VocabularyError) as e:
    raise ModelModuleError(f'module file {module.path}: {e}') from e
  warnings = _optimizer_warnings(module, spec)
  if exported_table.declared_table(module, spec) is not None:
    return Checked(warnings=warnings)
  built = model_restore.untrained(model_restore.RestoredModule(
      module, ctx, spec, model=None, embedding=None), seed=settings.seed)
  with tempfile.TemporaryDirectory(prefix='model-contract-') as scratch:
    serving = built.serving_model(built.write_vocabularies(scratch))
    concrete = serving.signatures()
    name = serving_contract.NEIGHBORS
    if name in concrete:
      _check_neighbors(module, serving.served()[name].specs,
                       sorted(concrete[name].structured_outputs))
    module.call('HUB', serving.trace_reusable)
    return Checked(tuple(sorted(serving.functions)), warnings)


def _optimizer_warnings(module: ModelModule, spec) -> Tuple[str, ...]:
  """Adagrad or FTRL left at TF's learning rate: under the batch-scaled
  loss its rows barely move (docs/model_contract.md measures it)."""
  optimizer = spec.optimizer
  if (optimizer.kind not in _ACCUMULATING or
      'learning_rate' in dict(optimizer.params)):
    return ()
  return (f'module file {module.path}: embedding_spec: {optimizer.kind} at '
          f"TF's default learning_rate {optimizer.learning_rate} barely "
          'moves the rows under the batch-scaled loss; give it a '
          'learning_rate (0.05 to 0.2) and an initial_accumulator_value '
          '(1e-3): docs/model_contract.md',)


def _check_neighbors(module: ModelModule, specs, outputs):
  """A `neighbors` signature (input `specs`, `outputs` names) as the
  `neighbors` command and `run` call it (push_root/consumer.py): one query
  input and an optional integer `k` in, `scores` and one other output out.
  """
  k = dict(specs).get(serving_contract.K)
  queries = serving_contract.neighbors_queries(dict(specs))
  answers = serving_contract.neighbors_answers(outputs)
  if (len(queries) != 1 or (k is not None and not k.dtype.is_integer) or
      serving_contract.SCORES not in outputs or len(answers) != 1):
    raise ModelModuleError(
        f'module file {module.path}: signature '
        f'{serving_contract.NEIGHBORS!r} takes {sorted(specs)} and answers '
        f'{outputs}; it must take one query input (and an integer '
        f'{serving_contract.K!r}) and answer {serving_contract.SCORES!r} '
        'and one other output')
