"""The self-test without a TPU: the CPU adapter's two implementations agree
for skip-gram and the two-tower example, and every perturbation of one side
is reported as a difference naming what differs."""

import numpy as np
import pytest

from pipelines import model_settings
from tests.support import interaction_fixtures
from tpu_embeddings.models import module_files
from tpu_embeddings.training.config import TableConfig
from tpu_embeddings.training.config import TrainerConfig
from tpu_embeddings.training.selftest import runner

# Each run traces and trains two adapters (seconds).
pytestmark = pytest.mark.slow

STEPS, VOCABULARY = 8, 300


def skipgram_settings(optimizer='adagrad', **table):
  spec = TableConfig(dim=16, optimizer=optimizer, **table).embedding_spec()
  return TrainerConfig(batch_size=256, embedding_spec=spec.to_json())


def two_tower():
  return model_settings.load(interaction_fixtures.MODULE_FILE)


def selftest(tmp_path, module, settings, perturb=''):
  return runner.run(module, settings, tpu='', steps=STEPS,
                    workdir=str(tmp_path), vocabulary_size=VOCABULARY,
                    perturb=perturb)


def failing(result):
  return {d.name for d in result.verdict.variables if not d.agrees}


def test_skipgram_steps_agree_and_the_tables_moved(tmp_path):
  result = selftest(tmp_path, module_files.builtin(), skipgram_settings())
  assert result.agrees, '\n'.join(result.lines)
  names = [d.name for d in result.verdict.variables]
  assert names == ['tokens/parameters', 'tokens/accumulators',
                   'contexts/parameters', 'contexts/accumulators']
  assert len(result.verdict.losses) == STEPS
  assert result.lines[0].startswith('selftest: no TPU reachable')
  assert result.lines[-1].startswith('AGREE')
  # word2vec's contexts table starts at zero: training moved it, so the
  # agreement is not of untouched values.
  contexts = next(d for d in result.verdict.variables
                  if d.name == 'contexts/parameters')
  assert contexts.scale > 0


def test_two_tower_tape_and_activation_gradients_agree(tmp_path):
  settings = TrainerConfig(batch_size=64, learning_rate_decay=False)
  result = selftest(tmp_path, two_tower(), settings)
  assert result.agrees, '\n'.join(result.lines)
  names = {d.name for d in result.verdict.variables}
  assert {'user/parameters', 'item/accumulators',
          'category/parameters'} <= names
  assert any(n.startswith('model/query_tower/') for n in names)
  assert any(n.startswith('dense_optimizer/') for n in names)


@pytest.mark.parametrize('perturb,named', [
    ('row', 'tokens/parameters'), ('slot', 'tokens/accumulators')])
def test_a_perturbed_initial_value_is_a_named_difference(tmp_path, perturb,
                                                         named):
  result = selftest(tmp_path, module_files.builtin(), skipgram_settings(),
                    perturb)
  assert not result.agrees
  assert named in failing(result)
  assert result.verdict.first_differing().step == 0
  assert result.lines[-1].startswith('DIFFER: first ')
  assert f'perturbed: B\'s initial {named} row 0' in result.lines


def test_one_steps_learning_rate_is_named_with_its_step(tmp_path):
  result = selftest(tmp_path, module_files.builtin(), skipgram_settings(),
                    'learning-rate')
  step = STEPS // 2
  assert not result.agrees
  assert {'tokens/parameters', 'contexts/parameters'} <= failing(result)
  # Each step starts from one state: only the perturbed step differs, and
  # its own loss is computed before its update.
  assert {d.step for d in result.verdict.variables if not d.agrees} == {step}
  assert all(d.agrees for d in result.verdict.losses)
  assert result.lines[-1].startswith(
      f'DIFFER: first tokens/parameters at step {step} ')


def test_a_constant_high_learning_rate_still_agrees_step_by_step(tmp_path):
  """At word2vec's rate with no warm-up, one rounding step grows past the
  tolerance within a few free-running steps; compared from one state at
  every step, the trainers agree."""
  settings = skipgram_settings().replace(learning_rate_decay=False)
  result = runner.run(module_files.builtin(), settings, tpu='', steps=20,
                      workdir=str(tmp_path), vocabulary_size=VOCABULARY)
  assert result.agrees, '\n'.join(result.lines)


def test_two_tower_wrong_learning_rate_differs(tmp_path):
  settings = TrainerConfig(batch_size=64, learning_rate_decay=False)
  result = selftest(tmp_path, two_tower(), settings, 'learning-rate')
  assert not result.agrees
  assert {'user/parameters', 'item/parameters'} <= failing(result)


def test_sgd_has_no_slot_to_perturb(tmp_path):
  with pytest.raises(ValueError, match='has no optimizer slot'):
    selftest(tmp_path, module_files.builtin(),
             skipgram_settings('sgd', learning_rate=0.5), 'slot')


def test_the_same_seed_gives_the_same_report(tmp_path):
  settings = skipgram_settings()
  first = selftest(tmp_path / 'a', module_files.builtin(), settings)
  second = selftest(tmp_path / 'b', module_files.builtin(), settings)
  np.testing.assert_array_equal(
      [d.max_abs for d in first.verdict.losses],
      [d.max_abs for d in second.verdict.losses])
