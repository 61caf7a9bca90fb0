"""Task CPU and memory from the config: the table drives the memory."""

import pytest

from pipelines import config as config_lib
from pipelines.kubeflow import resources as resources


def _config(**settings):
  return config_lib.PipelineConfig().replace(**settings)


def test_table_size_counts_rows_dim_and_optimizer_slots():
  adagrad = _config(**{'vocabulary.max_tokens': 999, 'table.dim': 10,
                       'table.context_table': False})
  size = resources.table_size(adagrad.embedding_spec(), 999)
  assert size.rows == 1000  # the cap plus the out-of-vocabulary row
  two = _config(**{'vocabulary.max_tokens': 999, 'table.dim': 10})
  assert resources.table_size(two.embedding_spec(), 999).rows == 2000
  assert size.weights_bytes == 1000 * 10 * 4
  assert size.state_bytes == 2 * size.weights_bytes  # + accumulators
  adam = _config(**{'table.optimizer': 'adam', 'table.dim': 10,
                    'table.context_table': False})
  assert resources.table_size(adam.embedding_spec(), 999).state_bytes == (
      3 * size.weights_bytes)  # + momenta + velocities
  # Without a cap, ASSUMED_ROWS.
  assert resources.table_size(adam.embedding_spec(), 0).rows == (
      resources.ASSUMED_ROWS)


def test_a_large_table_grows_the_trainer_validator_and_exporter_only():
  small = resources.estimate(_config(**{'vocabulary.max_tokens': 1000}),
                             tpu=True)
  big = resources.estimate(_config(**{'vocabulary.max_tokens': 10_000_000,
                                      'table.dim': 64}), tpu=True)
  assert sorted(big) == sorted(resources.TASKS)
  state_gb = 10_000_001 * 64 * 4 * 2 / 1e9
  for task in (resources.TRAINER, resources.VALIDATOR, resources.EXPORTER):
    assert big[task].memory_gb > small[task].memory_gb + state_gb - 1, task
  for task in (resources.EXAMPLE_GEN, resources.VOCABULARY, resources.PUSHER):
    assert big[task] == small[task], task
  # Both tables (tokens and contexts); the validator holds the pushed
  # baseline's too, the exporter one copy at a time.
  weights_gb = 2 * 10_000_001 * 64 * 4 / 1e9
  assert big[resources.VALIDATOR].memory_gb >= 1.5 * 2 * weights_gb
  assert 1.5 * weights_gb <= big[resources.EXPORTER].memory_gb < big[
      resources.VALIDATOR].memory_gb
  assert all(r.memory_gb == int(r.memory_gb) for r in big.values())


def test_trainer_on_cpu_keeps_tables_and_slots_in_host_memory():
  config = _config(**{'vocabulary.max_tokens': 50_000_000, 'table.dim': 64})
  state_gb = 2 * 50_000_001 * 64 * 4 * 2 / 1e9  # two tables, accumulators
  on_cpu = resources.estimate(config, tpu=False)[resources.TRAINER]
  on_tpu = resources.estimate(config, tpu=True)[resources.TRAINER]
  assert 1.5 * state_gb <= on_cpu.memory_gb < 1.5 * state_gb + 3
  assert on_tpu.memory_gb >= 2 * state_gb


def test_overrides_and_spec_fields():
  estimate = resources.estimate(_config(), tpu=False)
  out = resources.with_overrides(
      estimate, cpu=['EmbeddingTrainer=500m', 'EmbeddingPusher=2'],
      memory=['EmbeddingExporter=64Gi', 'Vocabulary=512M'])
  assert out[resources.TRAINER].cpu == 0.5
  assert out[resources.PUSHER].cpu == 2
  assert out[resources.EXPORTER].memory_gb == pytest.approx(68.719)
  assert out[resources.VOCABULARY].memory_gb == 0.512
  assert out[resources.VALIDATOR] == estimate[resources.VALIDATOR]
  assert out[resources.PUSHER].to_spec() == {
      'cpuRequest': 2, 'cpuLimit': 2, 'memoryRequest': 2.0,
      'memoryLimit': 2.0}


@pytest.mark.parametrize('cpu, memory, message', [
    (['Trainer=4'], [], "--cpu 'Trainer=4': unknown task 'Trainer'"),
    (['EmbeddingTrainer'], [], 'expected TASK=VALUE'),
    (['EmbeddingTrainer=0'], [], 'expected cores > 0'),
    (['EmbeddingTrainer=lots'], [], 'expected cores > 0'),
    ([], ['EmbeddingExporter=32GB'], 'expected a size > 0 such as 32G'),
    ([], ['EmbeddingExporter=0'], 'expected a size > 0'),
])
def test_bad_overrides_are_one_line(cpu, memory, message):
  with pytest.raises(ValueError) as e:
    resources.with_overrides(resources.estimate(_config(), tpu=False), cpu,
                             memory)
  assert message in str(e.value) and len(str(e.value).splitlines()) == 1
