"""submit / schedule drive the real kfp.Client against a loopback KFP API.

The server (tests/support/fake_kfp.py) answers the KFP v2beta1 REST calls the
client makes and records every request, so the tests check what actually went
over the wire. Errors and refusals are in test_client_errors.py.
"""


from pipelines.cli import main as cli
from pipelines.kubeflow import client as kubeflow_client
from tests.support.fake_kfp import API
from tests.support.fake_kfp import FakeKfpApi
from tpu_embeddings.training.config import TrainerConfig


def test_submit_sends_package_pipeline_root_and_arguments(package):
  path, spec, platform = package
  with FakeKfpApi() as api:
    submitted = kubeflow_client.submit(
        api.host, str(path), pipeline_root='gs://run-bucket/tfx',
        arguments={'note': 'hello'}, run_name='nightly',
        experiment='embeddings-exp')
  assert (submitted.run_id, submitted.experiment_id) == ('run-1', 'exp-1')
  assert api.posted('experiments') == [
      {'display_name': 'embeddings-exp', 'namespace': ''}]
  assert [r['path'] for r in api.requests].count(f'{API}/healthz') == 1
  [run] = api.posted('runs')
  assert run['display_name'] == 'nightly'
  assert run['experiment_id'] == 'exp-1'
  # Both documents of the package arrive, unchanged.
  assert run['pipeline_spec']['pipeline_spec'] == spec
  assert run['pipeline_spec']['platform_spec'] == platform
  assert run['runtime_config'] == {'pipeline_root': 'gs://run-bucket/tfx',
                                   'parameters': {'note': 'hello'}}


def test_submit_defaults_to_the_compiled_pipeline_root(package):
  path, _, _ = package
  with FakeKfpApi() as api:
    submitted = kubeflow_client.submit(api.host, str(path))
  [run] = api.posted('runs')
  assert run['runtime_config']['pipeline_root'] == 'gs://compiled-bucket/tfx'
  assert submitted.pipeline_root == 'gs://compiled-bucket/tfx'


def test_schedule_sends_the_six_field_cron_as_given(package):
  path, spec, _ = package
  with FakeKfpApi() as api:
    scheduled = kubeflow_client.schedule(
        api.host, str(path), cron='0 0 3 * * *',
        pipeline_root='gs://run-bucket/tfx', name='daily')
  assert scheduled.recurring_run_id == 'rr-1'
  [job] = api.posted('recurringruns')
  assert job['trigger'] == {'cron_schedule': {'cron': '0 0 3 * * *'}}
  assert job['display_name'] == 'daily'
  assert job['mode'] == 'ENABLE'
  assert job['max_concurrency'] == 1
  assert job['no_catchup'] is True
  assert job['experiment_id'] == scheduled.experiment_id
  assert job['pipeline_spec']['pipeline_spec'] == spec
  assert job['runtime_config']['pipeline_root'] == 'gs://run-bucket/tfx'


def test_schedule_command_end_to_end(package, capsys):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['schedule', '--host', api.host, '--package', str(path),
                   '--cron', '0 30 2 * * MON-FRI'])
  assert rc == 0
  assert api.posted('recurringruns')[0]['trigger']['cron_schedule'][
      'cron'] == '0 30 2 * * MON-FRI'
  assert 'scheduled recurring run rr-1' in capsys.readouterr().out


def test_submit_command_end_to_end(package, capsys):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['submit', '--host', api.host, '--package', str(path),
                   '--param', 'note=hi', '--pipeline-root', 'gs://b/r'])
  assert rc == 0
  [run] = api.posted('runs')
  assert run['runtime_config']['parameters'] == {'note': 'hi'}
  assert 'submitted run run-1' in capsys.readouterr().out


def test_submit_sets_roots_and_config_fields_at_run_time(package, capsys):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['submit', '--host', api.host, '--package', str(path),
                   '--param', 'data_root=gs://new-bucket/corpus',
                   '--param', 'trainer_config.train_steps=20000',
                   '--param', 'trainer_config={"window": 5}'])
  assert rc == 0, capsys.readouterr().err
  [run] = api.posted('runs')
  sent = run['runtime_config']['parameters']
  assert sent['data_root'] == 'gs://new-bucket/corpus'
  trainer = TrainerConfig.from_json(sent['trainer_config'])
  assert (trainer.train_steps, trainer.window, trainer.tpu) == (20000, 5,
                                                                'auto')
  assert set(sent) == {'data_root', 'trainer_config'}  # the rest: defaults


def test_schedule_sets_parameters_of_every_scheduled_run(package, capsys):
  path, _, _ = package
  with FakeKfpApi() as api:
    rc = cli.main(['schedule', '--host', api.host, '--package', str(path),
                   '--cron', '0 0 3 * * *',
                   '--param', 'trainer_config.batch_size=1024'])
  assert rc == 0, capsys.readouterr().err
  [job] = api.posted('recurringruns')
  assert TrainerConfig.from_json(job['runtime_config']['parameters'][
      'trainer_config']).batch_size == 1024
